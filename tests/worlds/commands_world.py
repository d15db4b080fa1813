"""A SimCord world for the slash-command tests: a guild with an admin and two members, four
channels (two with memory, one the bot cannot read, one never logged) on real PostgreSQL.

The bot is CORE's `EvaBot` from tests/bot/conftest.py (real services, Claude pointed at the
fake Anthropic) with ingest and the two command extensions; a test module picks them with
the ``eva_extensions``, ``bot_settings`` and ``world`` fixtures below (tests/bot/commands/conftest.py
imports them for its folder; a module elsewhere imports them and names them in its ``__all__``:
pytest finds fixtures in the module's namespace). Messages before the test are
seeded through the engine (dated, so answers are predictable); live ones go through ingest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import discord
import pytest
import simcord
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.cli.sync_commands import COMMAND_EXTENSIONS
from bot.client import EvaBot
from bot.settings import Settings
from memory.storage.log import NewMessage
from memory.storage.models import Chat, Message, OptOut, TreeNode
from tests.bot.conftest import make_bot_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.worlds.bot_world import Friends, dated, friends, seed_channel

EXTENSIONS = ("bot.gateway.cog", *COMMAND_EXTENSIONS)
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
LONG_MESSAGE_INDEX = 5  # general's message #5 is ~2,100 characters (two pages)


# Small sizes, so 64 short messages make a memory row (the defaults need ~50 KB of chat).
SMALL_MEMORY: dict[str, Any] = {
    "view_high": 2_500,
    "view_low": 1_200,
    "tail_start": 2_000,
    "tail_keep": 500,
    "tail_force": 4_000,
    "tail_cap": 50_000,
}


def small_memory_settings(fake_anthropic: FakeAnthropic) -> Settings:
    return make_bot_settings(fake_anthropic, **SMALL_MEMORY)


@dataclass
class World(Friends):
    admin: simcord.MemberActor  # ada, with Manage Server
    # general: memory, alice and bob, a compacted row
    other: simcord.ChannelHandle = field(kw_only=True)  # memory: "zebra", which general never contains
    hidden: simcord.ChannelHandle = field(kw_only=True)  # the bot cannot read its history
    empty: simcord.ChannelHandle = field(kw_only=True)  # never logged
    general_chat: int = 0
    other_chat: int = 0
    synced: list[discord.app_commands.AppCommand] = field(default_factory=list)

    def command(self, name: str) -> discord.app_commands.AppCommand:
        return next(c for c in self.synced if c.name == name)


def message(author: Any, k: int, text: str) -> NewMessage:
    (one,) = dated([author], START, [text], first=k)
    return one


async def seed(world: World) -> None:
    texts = [f"message {k} about the canoe trip and paddles, number {k}" for k in range(64)]
    texts[LONG_MESSAGE_INDEX] = " ".join(f"word{n}" for n in range(300))  # ~2,100 characters
    world.general_chat = await seed_channel(
        world, world.general, dated([world.alice, world.bob], START, texts)
    )
    await world.engine.compact(world.general_chat, until_idle=True, force_swap=True)
    zebras = [f"the zebra {k} is only in the other channel" for k in range(6)]
    other = [
        *dated([world.bob], START, zebras, first=100),
        message(world.alice, 120, "alice says hello in other"),
    ]
    world.other_chat = await seed_channel(world, world.other, other)


async def build_world(env: simcord.Env) -> World:
    """The world inside SimCord's running ``env`` (the conftest's ``simcord_env``)."""
    base = friends(env, with_admin=True)
    guild = base.guild
    other = guild.create_text_channel("other")
    me = guild.me
    assert me is not None
    hidden = guild.create_text_channel(
        "hidden", overwrites={me: discord.PermissionOverwrite(read_message_history=False)}
    )
    empty = guild.create_text_channel("empty")
    world = World(**vars(base), other=other, hidden=hidden, empty=empty)
    bot = env.bot
    assert isinstance(bot, EvaBot)
    world.synced = await bot.tree.sync()
    await seed(world)
    return world


@pytest.fixture
def eva_extensions() -> tuple[str, ...]:
    return EXTENSIONS


@pytest.fixture
def bot_settings(fake_anthropic: FakeAnthropic) -> Settings:
    return small_memory_settings(fake_anthropic)


@pytest.fixture
async def world(simcord_env: simcord.Env) -> World:
    return await build_world(simcord_env)


async def counts(sessions: async_sessionmaker[AsyncSession]) -> dict[str, Any]:
    """What a refused command must not change."""
    async with sessions() as s:
        return {
            "messages": await s.scalar(
                select(func.count()).select_from(Message).where(Message.text.is_not(None))
            ),
            "nodes": await s.scalar(select(func.count()).select_from(TreeNode)),
            "opt_outs": await s.scalar(select(func.count()).select_from(OptOut)),
            "chats": [(c.id, c.logging_paused, c.next_index) for c in (await s.scalars(select(Chat))).all()],
        }


async def authored(sessions: async_sessionmaker[AsyncSession], user_id: int) -> int:
    async with sessions() as s:
        return int(await s.scalar(select(func.count()).where(Message.author_id == user_id)) or 0)


def reply_text(result: simcord.InteractionResult) -> str:
    """A command's answer, which only the asker sees."""
    assert result.response is not None, "the command did not answer"
    assert result.response.ephemeral, "answers are private to the asker"
    return result.response.content


def causes(errors: list[BaseException]) -> list[BaseException]:
    """The exceptions behind what SimCord captured from the tree's error handler."""
    return [getattr(e, "original", e) for e in errors]
