"""The one SimCord world the bot and hardening tests build on: the services from the
composition root (`bot.app.build_services`, with the clock and the summarizer a test
chooses), the guild "friends" with alice, bob and the channel "general" (and ada, with
Manage Server, where a world needs an admin), and the loop that seeds a channel's memory
with dated messages before the test.

Each test family adds what it needs on top: the reply world (tests/worlds/reply_world.py: 300
compacted messages and a simulated clock), the slash-command world (commands_world.py),
the /settings world (settings_world.py) and the hardening world (tests/worlds/hardening_world.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import discord
import simcord
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.app import build_services
from bot.client import EvaBot
from bot.database import Database
from bot.gateway.ingest import Ingest
from bot.gateway.running import ingest_of
from bot.services import Services
from bot.settings import Settings
from memory.clock import Clock
from memory.compaction.summarizer import Summarizer
from memory.engine import MemoryEngine
from memory.storage.log import ChatKey, NewMessage

# Memory sizes at which a few messages make summary lines: ~6 messages of 80 bytes pass
# TAIL_START, every leaf over 64 bytes needs the model, and a row swaps at once (QUIET 0).
TINY_MEMORY: dict[str, Any] = {
    "node_bytes": 64,
    "tail_start": 300,
    "tail_keep": 60,
    "tail_force": 600,
    "view_high": 500,
    "view_low": 250,
    "quiet": 0.0,
}


def world_services(
    settings: Settings,
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
    *,
    clock: Clock | None = None,
    summarizer: Summarizer | None = None,
) -> Services:
    """The production wiring on the test database (no embedded server of its own)."""
    database = Database(engine=engine, sessions=sessions, embedded=None)
    return build_services(settings, database, clock=clock, summarizer=summarizer)


def make_bot(services: Services, extensions: Sequence[str]) -> EvaBot:
    """EvaBot with the intents production asks for (message content: the reply triggers read it)."""
    intents = discord.Intents.default()
    intents.message_content = True
    return EvaBot(services, extensions=tuple(extensions), intents=intents)


@dataclass
class Friends:
    """The guild every world starts from, inside SimCord's running ``env``."""

    env: simcord.Env
    services: Services
    guild: simcord.GuildHandle
    admin: simcord.MemberActor | None  # ada, with Manage Server (None where no test needs her)
    alice: simcord.MemberActor
    bob: simcord.MemberActor
    general: simcord.ChannelHandle

    @property
    def engine(self) -> MemoryEngine:
        return self.services.engine

    @property
    def ingest(self) -> Ingest:
        ingest = ingest_of(self.env.bot)  # type: ignore[arg-type]
        assert isinstance(ingest, Ingest)
        return ingest

    @property
    def me(self) -> discord.ClientUser:
        user = self.env.bot.user
        assert user is not None
        return user

    def bot_messages(self, channel: simcord.ChannelHandle | None = None) -> list[discord.Message]:
        return [m for m in (channel or self.general).history() if m.author.id == self.me.id]


def admin_role(guild: simcord.GuildHandle) -> simcord.RoleHandle:
    return guild.create_role("admins", permissions=discord.Permissions(manage_guild=True))


def friends(env: simcord.Env, *, with_admin: bool) -> Friends:
    """The guild "friends": [ada the admin,] alice, bob, then the channel "general"."""
    bot = env.bot
    assert isinstance(bot, EvaBot)
    guild = env.create_guild("friends")
    admin = None
    if with_admin:
        admins = admin_role(guild)
        admin = guild.add_member(env.create_user("ada"), roles=[admins])
    alice = guild.add_member(env.create_user("alice"))
    bob = guild.add_member(env.create_user("bob"))
    general = guild.create_text_channel("general")
    return Friends(env, bot.services, guild, admin, alice, bob, general)


def dated(
    people: Sequence[simcord.MemberActor], start: datetime, texts: Sequence[str], *, first: int = 0
) -> list[NewMessage]:
    """Message k of ``texts`` by people[k % len(people)], at ``start`` + ``first`` + k minutes,
    snowflake 10,000 + ``first`` + k (dated, so answers are predictable)."""
    return [
        NewMessage(
            author_name=people[k % len(people)].name,
            author_id=people[k % len(people)].id,
            created_at=start + timedelta(minutes=first + k),
            content=text,
            snowflake=10_000 + first + k,
        )
        for k, text in enumerate(texts)
    ]


async def seed_channel(world: Friends, channel: simcord.ChannelHandle, messages: Sequence[NewMessage]) -> int:
    """The channel's chat with ``messages`` appended (through the engine, not ingest); its id."""
    chat_id = await world.engine.ensure_chat(
        ChatKey("text", str(channel.name), discord_id=channel.id, guild_id=world.guild.id)
    )
    await world.engine.append_many(chat_id, list(messages))
    return chat_id
