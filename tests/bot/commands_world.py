"""A SimCord world for the slash-command tests: a guild with an admin and two members, four
channels (two with memory, one the bot cannot read, one never logged) on real PostgreSQL.

The bot is CORE's `EvaBot` from tests/bot/conftest.py (real services, Claude pointed at the
fake Anthropic) with ingest and the two command extensions; a test module picks them with
the ``eva_extensions``, ``bot_settings`` and ``world`` fixtures below (imported and named in
its ``__all__``: pytest finds fixtures in the module's namespace). Messages before the test are
seeded through the engine (dated, so answers are predictable); live ones go through ingest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import discord
import pytest
import simcord
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.cli_discord import COMMAND_EXTENSIONS
from bot.client import EvaBot
from bot.ingest import Ingest
from bot.services import Services
from bot.settings import Settings
from memory.engine import MemoryEngine
from memory.log import ChatKey, NewMessage
from memory.models import Chat, Message, OptOut, TreeNode
from tests.bot.conftest import make_bot_settings
from tests.fakes.anthropic_api import FakeAnthropic

EXTENSIONS = ("bot.cogs.ingest", *COMMAND_EXTENSIONS)
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
LONG_MESSAGE_INDEX = 5  # general's message #5 is ~2,100 characters (two pages)


def small_memory_settings(fake_anthropic: FakeAnthropic) -> Settings:
    """Small sizes, so 64 short messages make a memory row (the defaults need ~50 KB of chat)."""
    return make_bot_settings(
        fake_anthropic,
        view_high=2_500,
        view_low=1_200,
        tail_start=2_000,
        tail_keep=500,
        tail_force=4_000,
        tail_cap=50_000,
    )


@dataclass
class World:
    env: simcord.Env
    services: Services
    guild: simcord.GuildHandle
    admin: simcord.MemberActor
    alice: simcord.MemberActor
    bob: simcord.MemberActor
    general: simcord.ChannelHandle  # memory: alice and bob, a compacted row
    other: simcord.ChannelHandle  # memory: the word "zebra", which general never contains
    hidden: simcord.ChannelHandle  # the bot cannot read its history
    empty: simcord.ChannelHandle  # never logged
    general_chat: int = 0
    other_chat: int = 0
    synced: list[discord.app_commands.AppCommand] = field(default_factory=list)

    @property
    def engine(self) -> MemoryEngine:
        return self.services.engine

    @property
    def ingest(self) -> Ingest:
        ingest = self.services.extras["ingest"]
        assert isinstance(ingest, Ingest)
        return ingest

    def command(self, name: str) -> discord.app_commands.AppCommand:
        return next(c for c in self.synced if c.name == name)


def message(author: Any, k: int, text: str) -> NewMessage:
    return NewMessage(
        author_name=author.name,
        author_id=author.id,
        created_at=START + timedelta(minutes=k),
        content=text,
        snowflake=10_000 + k,
    )


async def seed(world: World) -> None:
    engine = world.engine
    guild_id = world.guild.id
    world.general_chat = await engine.ensure_chat(
        ChatKey("text", "general", discord_id=world.general.id, guild_id=guild_id)
    )
    world.other_chat = await engine.ensure_chat(
        ChatKey("text", "other", discord_id=world.other.id, guild_id=guild_id)
    )
    people = [world.alice, world.bob]
    general = []
    for k in range(64):
        text = f"message {k} about the canoe trip and paddles, number {k}"
        if k == LONG_MESSAGE_INDEX:
            text = " ".join(f"word{n}" for n in range(300))  # ~2,100 characters
        general.append(message(people[k % 2], k, text))
    await engine.append_many(world.general_chat, general)
    await engine.compact(world.general_chat, until_idle=True, force_swap=True)
    other = [message(world.bob, 100 + k, f"the zebra {k} is only in the other channel") for k in range(6)]
    other.append(message(world.alice, 120, "alice says hello in other"))
    await engine.append_many(world.other_chat, other)


async def build_world(env: simcord.Env) -> World:
    """The world inside SimCord's running ``env`` (the conftest's ``simcord_env``)."""
    bot = env.bot
    assert isinstance(bot, EvaBot)
    guild = env.create_guild("friends")
    admins = guild.create_role("admins", permissions=discord.Permissions(manage_guild=True))
    admin = guild.add_member(env.create_user("ada"), roles=[admins])
    alice = guild.add_member(env.create_user("alice"))
    bob = guild.add_member(env.create_user("bob"))
    general = guild.create_text_channel("general")
    other = guild.create_text_channel("other")
    me = guild.me
    assert me is not None
    hidden = guild.create_text_channel(
        "hidden", overwrites={me: discord.PermissionOverwrite(read_message_history=False)}
    )
    empty = guild.create_text_channel("empty")
    world = World(env, bot.services, guild, admin, alice, bob, general, other, hidden, empty)
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


def causes(errors: list[BaseException]) -> list[BaseException]:
    """The exceptions behind what SimCord captured from the tree's error handler."""
    return [getattr(e, "original", e) for e in errors]
