"""A SimCord world for /settings and the reply gate (on tests/worlds/bot_world.py): the reply world's
seeded "general" (real PostgreSQL, the Anthropic fake through the real SDK, a simulated clock)
with the command extensions loaded, an admin, a muted member, a second channel and an alert
channel."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

import discord
import simcord
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.client import EvaBot
from memory.storage.models import Message, UsageEntry
from tests.fakes.anthropic_api import FakeAnthropic
from tests.worlds.bot_world import friends
from tests.worlds.reply_world import World, seed

EXTENSIONS = (
    "bot.gateway.cog",
    "bot.reply.cog",
    "bot.commands.people",
    "bot.commands.admin",
    "bot.commands.settings",
)


@dataclass
class SettingsWorld:
    base: World
    admin: simcord.MemberActor
    carol: simcord.MemberActor  # has the "muted" role
    muted: simcord.RoleHandle
    random: simcord.ChannelHandle
    mods: simcord.ChannelHandle  # where an admin may send the budget warning

    @property
    def env(self) -> simcord.Env:
        return self.base.env


async def build_settings_world(env: simcord.Env, fake: FakeAnthropic) -> SettingsWorld:
    base = friends(env, with_admin=True)
    assert base.admin is not None
    muted = base.guild.create_role("muted")
    carol = base.guild.add_member(env.create_user("carol"), roles=[muted])
    random = base.guild.create_text_channel("random")
    mods = base.guild.create_text_channel("mods")
    world = World(**vars(base), fake=fake)
    await seed(world)
    bot = env.bot
    assert isinstance(bot, EvaBot)
    await bot.tree.sync()
    return SettingsWorld(world, base.admin, carol, muted, random, mods)


def said(result: simcord.InteractionResult) -> str:
    assert result.response is not None, "the command did not answer"
    assert result.response.ephemeral
    return result.response.content


async def is_logged(sessions: async_sessionmaker[AsyncSession], message: discord.Message) -> bool:
    async with sessions() as s:
        found = await s.scalar(select(Message.idx).where(Message.snowflake == message.id))
    return found is not None


async def spend(
    sessions: async_sessionmaker[AsyncSession], cost: str, at: datetime, *, guild_id: int | None,
    chat_id: int | None = None,
) -> None:  # fmt: skip
    """A ledger row as a reply or compaction would write it, at the simulated time."""
    async with sessions() as s, s.begin():
        s.add(UsageEntry(chat_id=chat_id, guild_id=guild_id, kind="compact", model="claude-haiku-4-5",
                         cost_usd=Decimal(cost), created_at=at))  # fmt: skip
