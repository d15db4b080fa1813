"""Hostile arguments, property-based: the model's tool calls (any JSON it could send)
and the slash commands' options (any text Discord lets through: addresses and queries with SQL
and regex metacharacters, NUL, huge and empty values). Each gets a result or one clear sentence;
nothing is ever written, no exception escapes, and a bad argument never looks like an outage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import simcord
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.core.tools import TOOL_UNAVAILABLE, ToolContext, ToolResult, run_tool
from bot.services import Services
from memory.errors import UserFacingError
from memory.storage.log import ChatKey, NewMessage
from memory.storage.models import Chat, Message, OptOut, TreeNode, UsageEntry
from tests.fakes.anthropic_api import FakeAnthropic
from tests.worlds.hardening_world import World, build_world, catch_up

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
NASTY = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "'; DROP TABLE messages; --",
    "%",
    "_",
    "\\",
    "%_\\%",
    ".*",
    "(?i)[a-z]+$",
    "^(a+)+$",
    "' OR '1'='1",
    "$1",
    ":query",
    "{}",
    "\u202eevil\u202c",
    "\u200b",
    "🎾" * 50,
    "x" * 10_000,
    "9" * 5000,
    "²",
    "١٢",
    "-1",
    "1e400",
    "NaN",
    "0x10",
    "+1",
    "40+8",
    "0+1",
    "3+2",
    "999999999999999999999+1",
]
text = st.one_of(st.sampled_from(NASTY), st.text(max_size=300))
value = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), text,
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)  # fmt: skip
tool_args = st.one_of(
    st.dictionaries(st.sampled_from(["id", "n", "page", "query", "author", "limit", "user"]), value, max_size=4),
    st.fixed_dictionaries({"id": st.integers(-5, 80), "n": st.sampled_from([1, 2, 3, 4, 64, 2**62])},
                          optional={"page": st.integers(-2, 5)}),
    st.fixed_dictionaries({"query": text}, optional={"author": text, "limit": value}),
    st.sampled_from([None, [], "zoom", 5, [{"id": 1}]]),
)  # fmt: skip


async def snapshot(sessions: async_sessionmaker[AsyncSession]) -> tuple[Any, ...]:
    """What no read may change."""
    async with sessions() as s:
        counts = [
            await s.scalar(select(func.count()).select_from(t))
            for t in (Message, TreeNode, UsageEntry, OptOut)
        ]
        texts = await s.scalar(select(func.md5(func.string_agg(func.coalesce(Message.text, ""), "|"))))
        chats = (
            await s.execute(select(Chat.id, Chat.next_index, Chat.logging_paused).order_by(Chat.id))
        ).all()
        return (*counts, texts, tuple(chats))


@pytest.fixture
async def seeded(services: Services) -> tuple[Services, int]:
    engine = services.engine
    chat = await engine.ensure_chat(ChatKey("text", "general", discord_id=555, guild_id=77))
    start = datetime(2026, 3, 1, tzinfo=UTC)
    bodies = [
        "'; DROP TABLE messages; -- said bob",
        "100% sure: 50_50 \\ [a-z]+ (?i)",
        "🎾🎉 padel",
        "nul\x00here",
    ]
    await engine.append_many(chat, [
        NewMessage("alice" if k % 2 else "bob", start + timedelta(minutes=k),
                   bodies[k] if k < len(bodies) else f"message {k} about the picnic and the lake, long enough",
                   author_id=1 + k % 2, snowflake=100 + k)
        for k in range(40)
    ])  # fmt: skip
    await catch_up(services)
    return services, chat


@FUZZ
@given(name=st.sampled_from(["zoom", "recall", "forget_me", "nope"]), args=tool_args)
@example(name="zoom", args={"id": "²", "n": 1})
@example(name="zoom", args={"id": "9" * 5000, "n": 1})
@example(name="zoom", args={"id": 1e300, "n": float("nan")})
@example(name="recall", args={"query": "a\x00b"})
@example(name="recall", args={"query": "padel", "author": "\x00"})
@example(name="recall", args={"query": "\ud83d"})
@example(name="forget_me", args={"user": "bob"})
async def test_any_tool_call_gets_a_result_or_one_sentence(
    seeded: tuple[Services, int], name: str, args: Any
) -> None:
    services, chat = seeded
    before = await snapshot(services.engine.sessions)
    asked: list[int] = []

    async def ask_forget() -> None:
        asked.append(1)

    ctx = ToolContext(
        services.engine, chat, asker_id=1, asker_name="alice", result_bytes=2000, ask_forget=ask_forget
    )
    result = await run_tool(ctx, name, args)
    assert isinstance(result, ToolResult) and result.text
    if result.is_error:
        assert result.text != TOOL_UNAVAILABLE, f"{name}({args!r}) looked like an outage"
        assert "\n" not in result.text and len(result.text) < 500, result.text
    else:
        assert len(result.text.encode()) <= 2000
    assert len(asked) <= 1 and (not asked or (name == "forget_me" and args == {}))
    assert await snapshot(services.engine.sessions) == before


@FUZZ
@given(
    address=text,
    query=text,
    author=st.one_of(st.none(), text),
    limit=st.integers(-3, 30),
    page=st.integers(-3, 5),
)
@example(address="0+1", query="\x00", author="\x00", limit=5, page=1)
@example(address="\ud800+1", query="\udfff", author=None, limit=5, page=99)
async def test_engine_reads_answer_or_refuse_in_one_sentence(
    seeded: tuple[Services, int], address: str, query: str, author: str | None, limit: int, page: int
) -> None:
    """The calls behind /zoom, /recall and `eva zoom` / `eva recall` with any text at all."""
    services, chat = seeded
    engine = services.engine
    for call in (
        lambda: engine.zoom_address(chat, address, page),
        lambda: engine.recall(chat, query, author=author, limit=limit),
    ):
        try:
            shown = await call()
        except UserFacingError as exc:
            assert str(exc) and "\n" not in str(exc)
        else:
            assert isinstance(shown, str) and shown


# --- the slash commands in SimCord ----------------------------------------------------------


@pytest.fixture
async def world(simcord_env: simcord.Env, fake_anthropic: FakeAnthropic) -> World:
    w = await build_world(simcord_env, fake_anthropic)
    for k in range(12):
        await (w.alice if k % 2 else w.bob).send(
            w.general, f"message {k}: 100% of the _picnic_ [a-z]+ 'quoted' \\ done"
        )
    await w.settle()
    return w


option = st.text(min_size=1, max_size=40).filter(lambda s: s.strip())
long_option = st.one_of(
    st.sampled_from([n for n in NASTY if n.strip() and len(n) <= 200]),
    st.text(min_size=1, max_size=200).filter(lambda s: s.strip()),
)


@settings(FUZZ, max_examples=40)
@given(
    address=st.one_of(st.sampled_from([n for n in NASTY if n.strip() and len(n) <= 40]), option),
    query=long_option,
)
@example(address="\x00", query="a\x00b")
@example(address="0+1", query="'; DROP TABLE messages; --")
async def test_any_slash_option_gets_an_answer_and_changes_nothing(
    world: World, address: str, query: str
) -> None:
    before = await snapshot(world.services.engine.sessions)
    cursor = world.env.error_cursor
    answers = [
        await world.alice.slash(world.general, "zoom", address=address),
        await world.alice.slash(world.general, "recall", query=query),
        await world.admin.slash(world.general, "memory node", address=address),
    ]
    for result in answers:
        assert result.response is not None and result.response.ephemeral
        shown = result.followups[-1] if result.followups else result.response
        assert shown.content or shown.attachments
    causes = [getattr(e, "original", e) for e in world.env.errors_since(cursor)]
    assert all(isinstance(c, UserFacingError) for c in causes), causes
    world.env.errors  # noqa: B018  (acknowledged: each was answered with its sentence)
    assert await snapshot(world.services.engine.sessions) == before
