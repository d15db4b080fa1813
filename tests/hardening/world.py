"""A SimCord world for the hardening tests: the real EvaBot with all four extensions (ingest,
reply, people, admin), real PostgreSQL, and the real Anthropic summarizer and reply client
pointed at the local fake, with memory sizes so small that a few messages make summary lines.

Two guilds: "friends" (channels general and other, a thread "plans" under general; members
ada the admin, alice, bob) and "faraway" (channel far; carol its admin, and alice). Alice also
has a DM with the bot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import discord
import simcord
from simcord.builders import ChannelHandle

from bot.client import EvaBot
from bot.ingest import Ingest
from bot.services import Services
from bot.settings import Settings
from memory.engine import MemoryEngine
from tests.bot.conftest import make_bot_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.hardening.support import work_left

EXTENSIONS = ("bot.cogs.ingest", "bot.cogs.reply", "bot.cogs.people", "bot.cogs.admin")
TINY_MEMORY: dict[str, Any] = {
    # ~6 messages of 80 bytes pass TAIL_START; every leaf over 64 bytes needs the model.
    "node_bytes": 64,
    "tail_start": 300,
    "tail_keep": 60,
    "tail_force": 600,
    "view_high": 500,
    "view_low": 250,
    "quiet": 0.0,  # swap at once
    "debounce_seconds": 0.0,
    "user_cooldown_seconds": 0.0,
    "tool_steps": 6,
}


def tiny_settings(fake: FakeAnthropic, **overrides: Any) -> Settings:
    return make_bot_settings(fake, **{**TINY_MEMORY, **overrides})


@dataclass
class World:
    env: simcord.Env
    services: Services
    fake: FakeAnthropic
    guild: simcord.GuildHandle
    admin: simcord.MemberActor
    alice: simcord.MemberActor
    bob: simcord.MemberActor
    general: ChannelHandle
    other: ChannelHandle
    thread: ChannelHandle
    far_guild: simcord.GuildHandle
    carol: simcord.MemberActor
    far_alice: simcord.MemberActor
    far: ChannelHandle
    sent: list[discord.Message] = field(default_factory=list)

    @property
    def engine(self) -> MemoryEngine:
        return self.services.engine

    @property
    def ingest(self) -> Ingest:
        ingest = self.services.ingest
        assert isinstance(ingest, Ingest)
        return ingest

    @property
    def me(self) -> discord.ClientUser:
        user = self.env.bot.user
        assert user is not None
        return user

    @property
    def dm(self) -> ChannelHandle:
        return self.alice.user.dm_channel

    async def chat_of(self, channel: ChannelHandle) -> int:
        info = await self.engine.chat_by_discord_id(channel.id)
        assert info is not None, f"{channel.name} has no memory"
        return info.id

    async def settle(self) -> None:
        """Everything queued is logged, and the compactor has caught up with every chat."""
        assert await self.ingest.flush(timeout=10)
        await catch_up(self.services)

    def bot_messages(self, channel: ChannelHandle) -> list[discord.Message]:
        return [m for m in channel.history() if m.author.id == self.me.id]


async def catch_up(services: Services, passes: int = 20) -> None:
    """Scheduler ticks until no row waits for the compactor (each tick builds, then swaps)."""
    scheduler = services.scheduler
    assert scheduler is not None
    for _ in range(passes):
        await scheduler.step()
        if not await work_left(services.engine.sessions):
            return
    raise AssertionError(f"the compactor did not catch up: {await work_left(services.engine.sessions)}")


async def build_world(env: simcord.Env, fake: FakeAnthropic) -> World:
    bot = env.bot
    assert isinstance(bot, EvaBot)
    guild = env.create_guild("friends")
    admins = guild.create_role("admins", permissions=discord.Permissions(manage_guild=True))
    admin = guild.add_member(env.create_user("ada"), roles=[admins])
    alice_user = env.create_user("alice")
    alice = guild.add_member(alice_user)
    bob = guild.add_member(env.create_user("bob"))
    general = guild.create_text_channel("general")
    other = guild.create_text_channel("other")
    thread = ChannelHandle(env, guild, env.backend.create_thread(general.id, "plans", alice.id))
    far_guild = env.create_guild("faraway")
    far_admins = far_guild.create_role("admins", permissions=discord.Permissions(manage_guild=True))
    carol = far_guild.add_member(env.create_user("carol"), roles=[far_admins])
    far_alice = far_guild.add_member(alice_user)
    far = far_guild.create_text_channel("far")
    await bot.tree.sync()
    return World(
        env, bot.services, fake, guild, admin, alice, bob, general, other, thread, far_guild, carol,
        far_alice, far,
    )
