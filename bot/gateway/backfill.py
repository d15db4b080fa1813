"""Catching up after time away: the history a channel got while ingest was not writing
(bot/gateway/ingest.py runs these; docs/design.md section 10).

After a start, a reconnect or a resume, every logged channel gets a backfill at the head of its
queue, then (events were lost) a comparison of the window around the outage with Discord.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
import structlog

from bot.gateway.chats import channel_for_chat
from bot.gateway.ops import Backfill, ChannelQueue
from bot.gateway.reconcile import Reconcile, window_start

if TYPE_CHECKING:
    from bot.gateway.ingest import Ingest

log = structlog.get_logger("bot.gateway.ingest")

UNKNOWN_CHANNEL = 10003  # Discord's error code: the channel was deleted


async def backfill_channel(ingest: Ingest, q: ChannelQueue, op: Backfill) -> None:
    """Log the channel's history after its last logged message (never below an erasure's
    moment: memory.storage.log.backfill_start), oldest first. Idempotent (duplicates are skipped), so
    a retry after an outage starts over safely. Each message is checked like a live one
    (opt-outs, erasures in progress) right before it is written."""
    chat_id = op.chat_id if op.chat_id is not None else await ingest.chat_of(q, q.channel)
    if chat_id is None:
        return
    ingest.channel_of_chat[chat_id] = q.channel_id
    starts = [s for s in (await ingest.engine.backfill_start(chat_id), op.after) if s is not None]
    if not starts:
        return
    written = 0
    try:
        history = q.channel.history(limit=None, after=discord.Object(min(starts)), oldest_first=True)
        async for message in history:
            if ingest.loggable(message) and await ingest.store(chat_id, message) is not None:
                written += 1
    except discord.NotFound as exc:
        if exc.code == UNKNOWN_CHANNEL:  # deleted while we were away
            await ingest.engine.forget_discord_chat(q.channel_id)
            log.info("ingest.channel_gone", channel_id=q.channel_id, chat_id=chat_id)
        return
    except discord.Forbidden:
        log.warning("ingest.backfill_forbidden", channel_id=q.channel_id, chat_id=chat_id)
        return
    if written:
        log.info("ingest.backfilled", channel_id=q.channel_id, chat_id=chat_id, messages=written)


async def queue_backfills(ingest: Ingest, guild_id: int | None, *, reconcile: bool) -> int:
    """Queue a backfill at the head of each logged channel's queue (of one guild, or all),
    then (``reconcile``: events were lost) a comparison of the window around the outage
    with Discord (bot/gateway/reconcile.py), then write again. Returns the number of channels queued."""
    try:
        chats = await ingest.retrying(ingest.engine.logged_discord_chats)
        # Read before any backfill runs: the newest message logged before the outage.
        last_at = await ingest.retrying(lambda: ingest.engine.last_message_times([c.id for c in chats]))
    except Exception as exc:  # a bug must not keep the gate shut: log live messages anyway
        log.error("ingest.resync_failed", guild_id=guild_id, error=type(exc).__name__)
        chats, last_at = [], {}
    queued = 0
    for info in chats:
        if guild_id is not None and info.guild_id != guild_id:
            continue
        if info.paused or (info.kind == "dm" and not ingest.settings.reply_in_dms):
            continue
        channel = channel_for_chat(ingest.bot, info)
        if channel is None:
            continue
        ingest.channel_of_chat[info.id] = channel.id
        q = ingest.queue_for(channel, info.guild_id)
        ingest.push(q, Backfill(chat_id=info.id), first=True)
        after = window_start(last_at.get(info.id), ingest.settings.reconcile_recent) if reconcile else None
        if after is not None:
            q.ops.insert(1, Reconcile(info.id, after))  # right behind its backfill, before live events
        queued += 1
    if guild_id is None:
        ingest.is_open = True
    else:
        ingest.held_guilds.discard(guild_id)
    ingest.opened()
    ingest.kick_all()
    return queued
