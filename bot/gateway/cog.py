"""The ingest extension: gateway events in, log operations out (see bot/gateway/ingest.py).

Every handler returns at once (it only queues), except those that erase a memory because its
channel, thread or guild is gone, which wait for the erasure (database outages included).
Raw events are used for edits and deletes, so messages that are not in discord.py's cache
count too.
"""

from __future__ import annotations

from typing import Any

import discord
import structlog
from discord.ext import commands

from bot.gateway.ingest import ChannelQueue, Ingest
from bot.gateway.reconcile import absent_guilds
from bot.gateway.running import INGEST_COG
from bot.gateway.walk import Reconciler
from bot.services import services_of
from bot.shards import describe_bot, owns_guild

log = structlog.get_logger(__name__)


class IngestCog(commands.Cog, name=INGEST_COG):
    def __init__(self, bot: commands.Bot, ingest: Ingest, reconciler: Reconciler) -> None:
        self.bot, self.ingest, self.reconciler = bot, ingest, reconciler
        self._ready_seen = False

    async def cog_unload(self) -> None:
        await self.reconciler.stop()
        await self.ingest.close()

    def _channel(self, channel_id: int, guild_id: int | None) -> Any:
        channel = self.bot.get_channel(channel_id)
        if channel is not None:
            return channel
        return self.bot.get_partial_messageable(channel_id, guild_id=guild_id)

    # --- messages
    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        self.ingest.queue_message(message)

    @commands.Cog.listener()
    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        if "content" not in payload.data:
            return  # not a full message (an old-style embed update): nothing to compare
        self.ingest.queue_edit(payload.message.channel, payload.guild_id, payload.message)

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        channel = self._channel(payload.channel_id, payload.guild_id)
        self.ingest.queue_erase(channel, payload.guild_id, {payload.message_id})

    @commands.Cog.listener()
    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        channel = self._channel(payload.channel_id, payload.guild_id)
        self.ingest.queue_erase(channel, payload.guild_id, set(payload.message_ids))

    # --- channels, threads and guilds that are gone
    @commands.Cog.listener()
    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        engine = self.ingest.engine

        def of_channel(q: ChannelQueue) -> bool:
            return channel.id in (q.channel_id, q.parent_id)

        await self.ingest.forget_channels(of_channel, lambda: engine.forget_discord_chat(channel.id))

    @commands.Cog.listener()
    async def on_raw_thread_delete(self, payload: discord.RawThreadDeleteEvent) -> None:
        engine, thread_id = self.ingest.engine, payload.thread_id
        await self.ingest.forget_channels(
            lambda q: q.channel_id == thread_id, lambda: engine.forget_discord_chat(thread_id)
        )

    @commands.Cog.listener()
    async def on_guild_remove(self, guild: discord.Guild) -> None:
        await self._forget_guild(guild.id)

    async def _forget_guild(self, guild_id: int) -> None:
        engine = self.ingest.engine
        await self.ingest.forget_channels(
            lambda q: q.guild_id == guild_id, lambda: engine.forget_guild(guild_id)
        )

    async def _forget_absent_guilds(self) -> int:
        """At READY: guilds that removed the bot while it was away (no GUILD_DELETE reached it).
        discord.py rebuilds its guild cache from READY, which lists unavailable guilds too.
        Judged for this process's shards only: another process's guilds are in no READY here."""
        services = self.ingest.services

        try:
            logged = await self.ingest.retrying(services.engine.live_guild_ids)
            mine = {guild_id for guild_id in logged if owns_guild(self.bot, guild_id)}
            gone = absent_guilds(mine, (g.id for g in self.bot.guilds))
        except Exception as exc:  # never keep the gate shut over this: the next READY tries again
            log.error("ingest.guild_check_failed", error=type(exc).__name__)
            return 0
        for guild_id in sorted(gone):
            log.info("ingest.guild_gone", guild_id=guild_id)
            await self._forget_guild(guild_id)
        return len(gone)

    # --- no gaps: backfill on every (re)connection before live messages are written
    @commands.Cog.listener()
    async def on_disconnect(self) -> None:
        self.ingest.hold()

    @commands.Cog.listener()
    async def on_ready(self) -> None:
        self.ingest.hold()
        # on_ready: every READY of a plain client, the first of an AutoShardedBot. (A shard's
        # later READY keeps the old guild cache, so on_shard_ready cannot tell a missing guild.)
        gone = await self._forget_absent_guilds()
        channels = await self.ingest.resync()
        services = self.ingest.services
        if services.scheduler is not None and services.scheduler.running:
            self.reconciler.start()  # the background walk runs where the compactor runs: `eva run`
        self._ready_seen = True
        me = self.bot.user
        log.info(
            "bot.ready",
            user_id=me.id if me else None,
            application_id=self.bot.application_id,
            guilds=len(self.bot.guilds),
            shards=describe_bot(self.bot),
            backfill_channels=channels,
            guilds_forgotten=gone,
        )

    @commands.Cog.listener()
    async def on_resumed(self) -> None:
        self.ingest.hold()
        channels = await self.ingest.resync(reconcile=False)  # Discord replayed every missed event
        log.info("bot.resumed", backfill_channels=channels)

    @commands.Cog.listener()
    async def on_shard_ready(self, shard_id: int) -> None:
        # An AutoShardedBot shard that identified again after the first start (no global
        # on_ready then); at the first start on_ready follows and does the work.
        if self._ready_seen:
            self.ingest.hold()
            await self.ingest.resync()

    @commands.Cog.listener()
    async def on_guild_available(self, guild: discord.Guild) -> None:
        # A guild back from an outage while we stay connected. During a (re)connection the
        # gate is shut and on_ready / on_resumed backfill everything.
        if self.ingest.is_open:
            self.ingest.hold(guild.id)
            await self.ingest.resync(guild.id)


async def setup(bot: commands.Bot) -> None:
    services = services_of(bot)
    ingest = Ingest(bot, services)
    reconciler = Reconciler(ingest, tick_seconds=services.settings.reconcile_tick)
    await bot.add_cog(IngestCog(bot, ingest, reconciler))
