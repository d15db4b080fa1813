"""How ingest writes each kind of queued operation (bot/gateway/ingest.py drains the queues and
calls these): appends in one transaction per batch, edits, deletes, backfills and
reconciliation pages. Who may be logged or named is asked right before each write
(bot/gateway/refusals.py), so opt-outs and erasures reach messages still waiting in a queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import discord
import structlog

from bot.gateway.backfill import backfill_channel
from bot.gateway.chats import is_dm, message_to_new, replied_snowflake, visible
from bot.gateway.ops import Append, Backfill, ChannelQueue, Edit, Erase, Op
from bot.gateway.reconcile import Reconcile, run_page
from memory import NewMessage
from memory.errors import DuplicateEntry

if TYPE_CHECKING:
    from bot.gateway.ingest import Ingest

log = structlog.get_logger("bot.gateway.ingest")


async def apply(ingest: Ingest, q: ChannelQueue, op: Op) -> None:
    """One operation other than an append."""
    engine = ingest.engine
    if isinstance(op, Reconcile):
        following = await run_page(ingest, q, op)
        if following is not None:
            ingest.push(q, following)  # behind what arrived meanwhile: live messages keep flowing
        return
    if isinstance(op, Backfill):
        await backfill_channel(ingest, q, op)
        return
    info = await engine.chat_by_discord_id(q.channel_id)
    if info is None:
        return  # an edit or delete in a channel with no memory
    if isinstance(op, Edit):
        names = None
        if op.message is not None:
            hidden = await ingest.hidden_people(op.message)
            names = await ingest.mentions.lookup(op.message, op.content, hidden)
        # Rendered by the engine under the row lock (memory/privacy/erase.py, edit_message): a person an
        # erasure took out of this message stays out of its new version.
        await engine.edit(info.id, op.message_id, op.content, op.attachments, names)
    elif isinstance(op, Erase):
        report = await engine.erase_messages(info.id, op.message_ids)
        if report.messages:
            log.info("ingest.erased", chat_id=info.id, messages=report.messages, lines=report.nodes)


async def apply_appends(ingest: Ingest, q: ChannelQueue, batch: list[Append]) -> None:
    """Messages of one channel in one transaction, in order: one chat lookup, one statement
    per message. Who may not be logged is decided first, so a DM chat is never made for
    messages that are all refused (a DM erased meanwhile)."""
    channel, messages = batch[0].message.channel, [op.message for op in batch]
    items = [item for m in messages if (item := await loggable_item(ingest, m)) is not None]
    if not items and is_dm(channel):
        return
    chat_id = await ingest.chat_of(q, channel, dm_person(ingest, channel, messages))
    if chat_id is None:
        return
    try:
        indexes = await ingest.engine.append_replies(chat_id, items)
    except DuplicateEntry:
        if len(batch) > 1:
            raise  # one at a time, then: the others must still be written
        return  # the same snowflake, appended by a racing writer
    if any(index is not None for index in indexes):
        _mark_dirty(ingest, chat_id)


async def store(ingest: Ingest, chat_id: int, message: discord.Message) -> int | None:
    """Log one message (a backfill's) unless it is refused; its index, or None (refused or
    duplicate)."""
    item = await loggable_item(ingest, message)
    if item is None:
        return None
    try:
        # One transaction: the reply target found under the chat's lock, then the append.
        (index,) = await ingest.engine.append_replies(chat_id, [item])
    except DuplicateEntry:
        return None  # the same snowflake, appended by a racing writer
    if index is not None:
        _mark_dirty(ingest, chat_id)
    return index


async def loggable_item(ingest: Ingest, message: discord.Message) -> tuple[NewMessage, int | None] | None:
    """The message as logged (mentions as names) and the snowflake it replies to; None: its
    author opted out or is being erased."""
    if await ingest.refusals.refuses(message):
        return None
    hidden = await ingest.hidden_people(message)
    rendered = await ingest.mentions.render(message, visible(message)[0], hidden)
    return message_to_new(message, None, rendered), replied_snowflake(message)


def skip_unstorable(q: ChannelQueue, op: Op, exc: Exception) -> None:
    """``op`` can never be stored (its data, or a bug): skipped with a line of ids, the rest goes on."""
    # The exception's text can quote SQL parameters (message text): log its type only.
    message_id = op.message.id if isinstance(op, Append) else getattr(op, "message_id", None)
    log.error(
        "ingest.write_failed",
        channel_id=q.channel_id,
        message_id=message_id,
        op=type(op).__name__,
        error=type(exc).__name__,
        sqlstate=getattr(exc, "sqlstate", None),
    )


def dm_person(ingest: Ingest, channel: Any, messages: Sequence[discord.Message]) -> Any:
    """Who a DM is with: the first of ``messages`` not written by the bot (None elsewhere)."""
    if not is_dm(channel):
        return None
    me = ingest.bot.user
    return next((m.author for m in messages if me is None or m.author.id != me.id), None)


def _mark_dirty(ingest: Ingest, chat_id: int) -> None:
    if ingest.services.scheduler is not None:
        ingest.services.scheduler.mark_dirty(chat_id)
