"""The hardening tests' world (on tests/worlds/bot_world.py): the real EvaBot with all four extensions (ingest,
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
from bot.services import Services
from bot.settings import Settings
from tests.bot.conftest import make_bot_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.hardening.support import work_left
from tests.worlds.bot_world import TINY_MEMORY, Friends, admin_role, friends

EXTENSIONS = ("bot.gateway.cog", "bot.reply.cog", "bot.commands.people", "bot.commands.admin")
TINY_SETTINGS: dict[str, Any] = {
    **TINY_MEMORY,
    "debounce_seconds": 0.0,
    "user_cooldown_seconds": 0.0,
    "tool_steps": 6,
    # SimCord's messages are dated from its own epoch (2026-01-01), the compactor's clock is the
    # wall clock: a window of a century keeps every world's people "recent" for the cards.
    "people_days": 36_500,
}


def tiny_settings(fake: FakeAnthropic, **overrides: Any) -> Settings:
    return make_bot_settings(fake, **{**TINY_SETTINGS, **overrides})


@dataclass
class World(Friends):
    admin: simcord.MemberActor  # ada, with Manage Server
    fake: FakeAnthropic = field(kw_only=True)
    other: ChannelHandle = field(kw_only=True)
    thread: ChannelHandle = field(kw_only=True)
    far_guild: simcord.GuildHandle = field(kw_only=True)
    carol: simcord.MemberActor = field(kw_only=True)
    far_alice: simcord.MemberActor = field(kw_only=True)
    far: ChannelHandle = field(kw_only=True)
    sent: list[discord.Message] = field(default_factory=list)

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
    base = friends(env, with_admin=True)
    guild = base.guild
    other = guild.create_text_channel("other")
    thread = ChannelHandle(env, guild, env.backend.create_thread(base.general.id, "plans", base.alice.id))
    far_guild = env.create_guild("faraway")
    far_admins = admin_role(far_guild)
    carol = far_guild.add_member(env.create_user("carol"), roles=[far_admins])
    far_alice = far_guild.add_member(base.alice.user)
    far = far_guild.create_text_channel("far")
    bot = env.bot
    assert isinstance(bot, EvaBot)
    await bot.tree.sync()
    return World(
        **vars(base),
        fake=fake,
        other=other,
        thread=thread,
        far_guild=far_guild,
        carol=carol,
        far_alice=far_alice,
        far=far,
    )
