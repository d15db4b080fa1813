"""The Discord client: a commands.Bot holding the services the composition root built.

Nothing here reaches for globals: cogs read ``bot.services``. :class:`ShardedEvaBot` is the same
bot as an ``AutoShardedBot`` holding SHARD_IDS of SHARD_COUNT (bot/shards.py); nothing else
depends on how many shards a process holds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import discord
import structlog
from discord.ext import commands

from bot.commands.tree import EvaCommandTree
from bot.services import Services
from bot.shards import IdentifyBuckets

log = structlog.get_logger(__name__)

# Loaded in this order by setup_hook; unloaded in reverse by close(). Ingest comes first so
# that every message is queued for the log before any other cog sees it.
EXTENSIONS = (
    "bot.gateway.cog",
    "bot.reply.cog",
    "bot.commands.people",
    "bot.commands.admin",
    "bot.commands.settings",
)

DEFAULT_GUILD_READY_TIMEOUT = 2.0  # discord.py's default wait for the guilds after READY


def eva_intents(*, members: bool = False) -> discord.Intents:
    """Guilds (channels, threads), guild and DM messages, and Message Content (privileged:
    enable it in the Developer Portal). Members (privileged too) only with the dashboard, whose
    every request asks the gateway's cache whether the signed-in admin still has Manage Server:
    without it discord.py caches no member and hears of no role change. Names arrive with each
    message either way."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = True
    intents.message_content = True
    intents.members = members
    return intents


# Users only: a model reply that says "@everyone" or names a role never pings anyone.
ALLOWED_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=True)


class EvaBot(commands.Bot):
    def __init__(
        self,
        services: Services,
        *,
        extensions: Sequence[str] = EXTENSIONS,
        guild_ready_timeout: float = DEFAULT_GUILD_READY_TIMEOUT,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("command_prefix", commands.when_mentioned)
        dashboard = services.settings.dashboard_port is not None
        kwargs.setdefault("intents", eva_intents(members=dashboard))
        kwargs.setdefault("allowed_mentions", ALLOWED_MENTIONS)
        kwargs.setdefault("tree_cls", EvaCommandTree)
        kwargs.setdefault("help_command", None)
        # Without the Members intent there is nothing to chunk; asking would delay READY. With
        # it (the dashboard), every member is cached, so a signed-in admin is always found.
        kwargs.setdefault("chunk_guilds_at_startup", dashboard)
        # A text-only bot: discord.py's warnings about missing voice libraries are noise.
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
        super().__init__(guild_ready_timeout=guild_ready_timeout, **kwargs)
        self.services = services
        self.extension_names = tuple(extensions)
        self._released = False

    async def setup_hook(self) -> None:
        for name in self.extension_names:
            await self.load_extension(name)

    async def on_command_error(self, context: commands.Context[Any], error: commands.CommandError, /) -> None:
        """A mention is the (only) prefix, so every message that starts with one looks for a
        text command; there are none to find. The default handler would log the first word of
        the message; other errors are logged by type only (never text)."""
        if isinstance(error, commands.CommandNotFound):
            return
        ids = {"channel_id": context.channel.id, "user_id": context.author.id}
        log.warning("bot.command_error", **ids, error=type(error).__name__)

    async def close(self) -> None:
        """Gateway first (no new events), then the extensions in reverse order (ingest writes
        what it holds), then the scheduler (a compaction in flight finishes or is cancelled),
        then the Claude client. The database belongs to whoever opened it."""
        if self._released:
            await super().close()
            return
        self._released = True
        try:
            await super().close()
        finally:
            for name in reversed([n for n in self.extension_names if n in self.extensions]):
                try:
                    await self.unload_extension(name)
                except Exception as exc:  # keep releasing the rest
                    log.warning("bot.unload_failed", extension=name, error=type(exc).__name__)
            if self.services.scheduler is not None:
                await self.services.scheduler.stop()
            with contextlib.suppress(Exception):
                await self.services.claude.close()


class ShardedEvaBot(EvaBot, commands.AutoShardedBot):
    """EvaBot on some or all shards (``shard_count``, ``shard_ids``): each shard its own
    gateway connection, IDENTIFYs spaced by ``max_concurrency`` bucket."""

    def __init__(self, services: Services, **kwargs: Any) -> None:
        super().__init__(services, **kwargs)
        self.identify_buckets = IdentifyBuckets()

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        buckets = self.identify_buckets
        if buckets.max_concurrency is None:
            limits = await self.fetch_session_start_limits()
            buckets.max_concurrency = max(1, limits.max_concurrency)
        waited = await buckets.wait(shard_id or 0)
        log.info("gateway.identify", shard_id=shard_id, waited=round(waited, 1))
