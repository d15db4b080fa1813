"""The reply tests' world (on tests/worlds/bot_world.py): the real EvaBot with the ingest and reply
extensions, real PostgreSQL, and the local fake of the Anthropic API reached through the real
SDK; a simulated clock and the deterministic summarizer passed to the composition root.

The channel "general" starts with 300 seeded messages by alice and bob, compacted by the
deterministic FakeSummarizer under small thresholds into a memory row of 16 lines (about 3 KB,
enough with tools and system for the fake's 1,024-token minimum cacheable prefix) and a raw
tail of 9 messages. Message #37 holds the only "flamingo"; message #50 is 3,000 characters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import discord
import simcord
from simcord.backend.models.message import MessageSticker
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.services import Services
from bot.settings import Settings
from memory.clock import SimulatedClock
from memory.fakes.summarizer import FakeSummarizer
from memory.storage.models import Message
from tests.fakes.anthropic_api import FakeAnthropic, LogEntry
from tests.worlds.bot_world import Friends, dated, friends, seed_channel, world_services

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SEEDED = 300
FLAMINGO_INDEX = 37
LONG_INDEX = 50
LONG_TEXT = " ".join(f"w{n:04d}" for n in range(500))  # 2,999 characters
EXTENSIONS = ("bot.gateway.cog", "bot.reply.cog")
# Small sizes: 300 messages make a row of 16 lines (the defaults need ~50 KB of chat).
SMALL_MEMORY: dict[str, Any] = {
    "node_bytes": 200,
    "view_high": 6_000,
    "view_low": 3_000,
    "tail_start": 3_000,
    "tail_keep": 800,
    "tail_force": 6_000,
    "tail_cap": 50_000,
    "quiet": 60.0,
}
BASE_SETTINGS: dict[str, Any] = {
    **SMALL_MEMORY,
    "anthropic_api_key": "test-key",
    "anthropic_timeout": 10.0,
    "debounce_seconds": 0.0,  # SimCord settles each action; the debounce has its own test
    "user_cooldown_seconds": 30.0,
    "tool_steps": 6,
    "tool_result_bytes": 8000,
}


def make_settings(**overrides: Any) -> Settings:
    return Settings(_env_file=None, **{**BASE_SETTINGS, **overrides})  # type: ignore[call-arg]


def make_services(
    engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession], fake: FakeAnthropic, settings: Settings
) -> Services:
    """The composition root's services with a simulated clock and the deterministic summarizer;
    replies reach the fake with two SDK retries, as in production (its faults carry a 10 ms
    retry-after)."""
    assert settings.anthropic_base_url == fake.base_url, "make_settings(anthropic_base_url=fake.base_url)"
    clock = SimulatedClock(START + timedelta(days=1))
    summarizer = FakeSummarizer(node_bytes=settings.node_bytes)
    return world_services(settings, engine, sessions, clock=clock, summarizer=summarizer)


@dataclass
class World(Friends):
    fake: FakeAnthropic = field(kw_only=True)
    chat_id: int = 0
    marks: list[int] = field(default_factory=list)

    @property
    def clock(self) -> SimulatedClock:
        assert isinstance(self.services.clock, SimulatedClock)
        return self.services.clock

    def later(self, seconds: float = 120) -> None:
        """Move past the per-user cooldown."""
        self.clock.advance(seconds)

    def replies(self) -> list[LogEntry]:
        return self.fake.requests("reply")


async def seed(world: World) -> None:
    texts = [f"message {k} about the paddle boat trip and pizza number {k * 7}" for k in range(SEEDED)]
    texts[FLAMINGO_INDEX] = "alice, remember the pink flamingo we saw at the lake?"  # by bob
    texts[LONG_INDEX] = LONG_TEXT
    world.chat_id = await seed_channel(world, world.general, dated([world.alice, world.bob], START, texts))
    world.clock.set(START + timedelta(days=1))
    await world.engine.compact(world.chat_id, until_idle=True, force_swap=True)


async def build_world(env: simcord.Env, fake: FakeAnthropic, *, seeded: bool = True) -> World:
    base = friends(env, with_admin=False)
    world = World(**vars(base), fake=fake)
    if seeded:
        await seed(world)
    return world


async def authored(sessions: async_sessionmaker[AsyncSession], user_id: int) -> int:
    """Messages in the log still credited to ``user_id`` (erasure removes the author)."""
    async with sessions() as s:
        return int(await s.scalar(select(func.count()).where(Message.author_id == user_id)) or 0)


async def logged_snowflakes(sessions: async_sessionmaker[AsyncSession], chat_id: int) -> set[int]:
    async with sessions() as s:
        rows = await s.scalars(select(Message.snowflake).where(Message.chat_id == chat_id))
        return {int(x) for x in rows.all() if x is not None}


def user_text(body: dict[str, Any]) -> str:
    """All text of the first user message of a request, joined (image blocks left out)."""
    return "".join(block["text"] for block in body["messages"][0]["content"] if block["type"] == "text")


def marked_blocks(body: dict[str, Any]) -> list[tuple[str, int]]:
    """Where the cache marks are: ("system", i) / ("messages.m", i) / ("tools", i)."""
    found = [("tools", i) for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    found += [("system", i) for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    for m, message in enumerate(body["messages"]):
        for i, block in enumerate(message["content"]):
            if "cache_control" in block:
                found.append((f"messages.{m}", i))
    return found


async def post_raw(
    world: World,
    author: simcord.MemberActor,
    content: str = "",
    *,
    reply_to: discord.Message | None = None,
    stickers: Sequence[str] = (),
    nitro_content: str | None = None,
) -> discord.Message:
    """A message SimCord's actors cannot send: stickers, or more than 2,000 characters (Discord
    allows 4,000 with Nitro; SimCord enforces everyone else's 2,000, so the text is put in
    after its validation). Published through the gateway like any other, then settled."""
    backend = world.env.backend
    reference = None
    if reply_to is not None:
        reference = {"channel_id": str(world.general.id), "message_id": str(reply_to.id)}
    sticker_items = [
        MessageSticker(id=backend.snowflake(), name=name, format_type=1, guild_id=world.guild.id)
        for name in stickers
    ]
    prepared = backend.prepare_message(
        world.general.id, author.id, content, stickers=sticker_items, reference=reference
    )
    if nitro_content is not None:
        prepared = dataclasses.replace(prepared, content=nitro_content)
    committed = backend.commit_message(prepared)
    await world.env.settle()
    return next(m for m in world.general.history() if m.id == committed.id)
