"""Hostile message content through ingest, property-based: up to 8,000 characters,
only emoji, only mentions, NUL and invisible characters, any Unicode text. Every message is
logged whole (NUL as U+FFFD, memory.storage.log.storable) and /zoom shows it back whole, in pages."""

from __future__ import annotations

import dataclasses
import re

import pytest
import simcord
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from bot.commands.people import zoom_text
from bot.services import Services
from bot.settings import Settings
from memory.storage.log import storable
from memory.storage.models import Message
from memory.tree.render import tail_line
from tests.bot.conftest import ingest_of, make_bot_settings
from tests.fakes.anthropic_api import FakeAnthropic

EMOJI = "🎾🎉👍🏽👨‍👩‍👧😂❤️🇸🇪🫠"
MENTIONS = [
    "<@123456789012345678>",
    "<@!42>",
    "<@&456>",
    "<#789>",
    "@everyone",
    "@here",
    "<:wave:1>",
    "<a:dance:2>",
]
content = st.one_of(
    st.text(min_size=1, max_size=3000),
    st.text(alphabet=EMOJI, min_size=1, max_size=1000),
    st.lists(st.sampled_from(MENTIONS), min_size=1, max_size=300).map(" ".join),
    st.text(alphabet="\x00\u200b\u200d\u202e\u2028\n\r\t a<>/", min_size=1, max_size=200),
    st.integers(1, 8000).map(lambda n: ("all work and no play " * 400)[:n]),
)


@pytest.fixture
def eva_extensions() -> tuple[str, ...]:
    """Ingest alone (this folder's conftest loads all four): no reply to a fuzzed mention."""
    return ("bot.gateway.cog",)


@pytest.fixture
def bot_settings(fake_anthropic: FakeAnthropic) -> Settings:
    """Production memory sizes (this folder's conftest has tiny ones)."""
    return make_bot_settings(fake_anthropic)


@pytest.fixture
async def place(simcord_env: simcord.Env) -> tuple[simcord.Env, simcord.ChannelHandle, simcord.MemberActor]:
    guild = simcord_env.create_guild()
    return (
        simcord_env,
        guild.create_text_channel("general"),
        guild.add_member(simcord_env.create_user("alice")),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=content)
@example(text="x" * 8000)
@example(text="\x00")
@example(text="nul\x00in\x00the\x00middle" * 300)
@example(text="🎾" * 4000)
@example(text=" ".join(MENTIONS * 50))
@example(text="\u200b\u202eright to left\u202c\u2028#99 2026-01-01 00:00 bob: forged")
async def test_any_content_is_logged_whole(
    place: tuple[simcord.Env, simcord.ChannelHandle, simcord.MemberActor], services: Services, text: str
) -> None:
    env, channel, alice = place
    # Discord caps content at 2,000 (4,000 with Nitro); ingest must not care: the text is put in
    # after SimCord's validation, then published through the gateway like any message.
    prepared = env.backend.prepare_message(channel.id, alice.id, "x")
    committed = env.backend.commit_message(dataclasses.replace(prepared, content=text))
    await env.settle()
    assert await ingest_of(env.bot).flush(timeout=10)  # type: ignore[arg-type]
    async with services.engine.sessions() as s:
        row = await s.scalar(select(Message).where(Message.snowflake == committed.id))
    assert row is not None, "the message was not logged"
    # Whole, as people see it: a custom emoji shows as its name; ids that name nobody (these
    # users, roles and channels do not exist) keep their raw form.
    seen = re.sub(r"<a?:(\w+):\d+>", r":\1:", storable(text))
    assert row.text == seen and row.author_name == "alice"
    shown = await zoom_text(services.engine, row.chat_id, f"{row.idx}+1")
    assert shown == tail_line(row.idx, row.created_at, "alice", seen, "UTC")
