"""Catching up after time away: the history a channel got while ingest was not writing
(docs/design.md section 10). After a start, a reconnect or a resume, bot/gateway/ingest.py
queues a backfill at the head of every logged channel's queue, and runs it here.
"""

from __future__ import annotations

import discord
import structlog

from bot.gateway.ops import Backfill, ChannelQueue
from bot.gateway.writer import LogWriter

log = structlog.get_logger("bot.gateway.ingest")

UNKNOWN_CHANNEL = 10003  # Discord's error code: the channel was deleted


async def backfill_channel(writer: LogWriter, q: ChannelQueue, op: Backfill) -> None:
    """Log the channel's history after its last logged message (never below an erasure's
    moment: memory.storage.log.backfill_start), oldest first. Idempotent (duplicates are skipped), so
    a retry after an outage starts over safely. Each message is checked like a live one
    (opt-outs, erasures in progress) right before it is written."""
    chat_id = op.chat_id if op.chat_id is not None else await writer.chat_of(q, q.channel)
    if chat_id is None:
        return
    writer.channel_of_chat[chat_id] = q.channel_id
    starts = [s for s in (await writer.engine.backfill_start(chat_id), op.after) if s is not None]
    if not starts:
        return
    written = 0
    try:
        history = q.channel.history(limit=None, after=discord.Object(min(starts)), oldest_first=True)
        async for message in history:
            if writer.loggable(message) and await writer.store(q, message) is not None:
                written += 1
    except discord.NotFound as exc:
        if exc.code == UNKNOWN_CHANNEL:  # deleted while we were away
            await writer.engine.forget_discord_chat(q.channel_id)
            log.info("ingest.channel_gone", channel_id=q.channel_id, chat_id=chat_id)
        return
    except discord.Forbidden:
        log.warning("ingest.backfill_forbidden", channel_id=q.channel_id, chat_id=chat_id)
        return
    if written:
        log.info("ingest.backfilled", channel_id=q.channel_id, chat_id=chat_id, messages=written)
