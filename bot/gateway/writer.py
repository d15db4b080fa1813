"""The write side of ingest: how each queued operation reaches the log (bot/gateway/ingest.py
drains the queues and hands the batches here; bot/gateway/backfill.py and
bot/gateway/reconcile.py write through it too). Appends go in one transaction per batch. Who may
be logged or named is asked right before each write (bot/gateway/refusals.py), so opt-outs and
erasures reach messages still waiting in a queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import discord
import structlog

from bot.gateway.chats import (
    LOGGED_TYPES,
    chat_for_channel,
    chat_key,
    is_dm,
    keep_current,
    log_entry,
    visible,
)
from bot.gateway.mentions import MentionLookup
from bot.gateway.ops import Append, ChannelQueue, Edit, Erase, Op
from bot.gateway.refusals import Refusals
from bot.services import Services
from memory import NewMessage
from memory.errors import DuplicateEntry

log = structlog.get_logger("bot.gateway.ingest")

# A message as logged with the snowflake it replies to, and who it is about (their opt-out refuses it).
LogEntry = tuple[tuple[NewMessage, int | None], int | None]


class LogWriter:
    """Writes what ingest drained: the chat of a channel, the refusals, the mentions as names."""

    def __init__(
        self, bot: discord.Client, services: Services, refusals: Refusals, mentions: MentionLookup
    ) -> None:
        self.bot, self.services = bot, services
        self.engine, self.settings = services.engine, services.settings
        self.refusals, self.mentions = refusals, mentions
        self.channel_of_chat: dict[int, int] = {}  # the channel a chat was last written from

    def loggable(self, message: discord.Message) -> bool:
        """Whether people can see ``message`` as a conversation (not its refusals: those are
        asked when it is written)."""
        if message.type not in LOGGED_TYPES or message.flags.ephemeral:
            return False
        me = self.bot.user
        if me is not None and message.author.id == me.id:
            return True
        if message.author.bot and self.settings.ignore_bots:
            return False
        return not (is_dm(message.channel) and not self.settings.reply_in_dms)

    async def chat_of(self, q: ChannelQueue, channel: Any, person: Any = None) -> int | None:
        chat_id = await chat_for_channel(self.bot, channel, person)
        if chat_id is not None:
            self.channel_of_chat[chat_id] = q.channel_id
        return chat_id

    async def hidden_people(self, message: discord.Message) -> set[int]:
        """People a new line must not name (bot/gateway/refusals.py)."""
        return await self.refusals.hidden(message)

    async def append_batch(self, q: ChannelQueue, batch: list[Append]) -> None:
        """Messages of one channel in one transaction, in order: one call into the engine, which
        finds the chat, leaves out who opted out and appends the rest. Fenced people (an erasure)
        are left out first, so a DM chat is never made for messages that are all refused (a DM
        erased meanwhile)."""
        channel, messages = batch[0].message.channel, [op.message for op in batch]
        entries = [await self._entry(m) for m in messages if not self.refusals.fenced(m)]
        if not entries and is_dm(channel):
            return
        try:
            await self._append(q, channel, entries, self._dm_person(channel, messages))
        except DuplicateEntry:
            if len(batch) > 1:
                raise  # one at a time, then: the others must still be written
            # else: the same snowflake, appended by a racing writer

    async def store(self, q: ChannelQueue, message: discord.Message) -> int | None:
        """Log one message (a backfill's, its chat known) unless it is refused; its index, or
        None (refused or duplicate)."""
        if self.refusals.fenced(message):
            return None
        try:
            # One transaction: the opt-outs and the reply target read, then the append.
            (index,) = await self._append(q, q.channel, [await self._entry(message)]) or [None]
        except DuplicateEntry:
            return None  # the same snowflake, appended by a racing writer
        return index

    async def _append(
        self, q: ChannelQueue, channel: Any, entries: list[LogEntry], person: Any = None
    ) -> list[int | None]:
        """``entries`` appended to the channel's chat in one call into the engine; at the first
        sight of a channel its chat is made first (chat_for_channel: not for a paused chat, nor
        a DM with a person who opted out), and the call made again. [] when nothing was written."""
        if is_dm(channel) and not self.settings.reply_in_dms:
            return []
        items, about = [entry for entry, _ in entries], [person_id for _, person_id in entries]
        found = await self.engine.append_from_discord(channel.id, items, about)
        if found is None:
            if await self.chat_of(q, channel, person) is None:
                return []
            found = await self.engine.append_from_discord(channel.id, items, about)
            if found is None:
                return []
        info, indexes = found
        if info.paused:
            return []
        self.channel_of_chat[info.id] = q.channel_id
        await keep_current(self.engine, info, chat_key(channel, person))
        written = sum(index is not None for index in indexes)
        if written:
            self._mark_dirty(info.id)
            self.services.metrics.messages_logged.inc(written)
        return indexes

    async def change(self, q: ChannelQueue, op: Edit | Erase) -> None:
        """An edit or a delete of logged messages."""
        info = await self.engine.chat_by_discord_id(q.channel_id)
        if info is None:
            return  # an edit or delete in a channel with no memory
        if isinstance(op, Edit):
            names = None
            if op.message is not None:
                hidden = await self.hidden_people(op.message)
                names = await self.mentions.lookup(op.message, op.content, hidden)
            # Rendered by the engine under the row lock (memory/privacy/erase.py, edit_message): a
            # person an erasure took out of this message stays out of its new version.
            await self.engine.edit(info.id, op.message_id, op.content, op.attachments, names)
        else:
            report = await self.engine.erase_messages(info.id, op.message_ids)
            if report.messages:
                log.info("ingest.erased", chat_id=info.id, messages=report.messages, lines=report.nodes)

    async def _entry(self, message: discord.Message) -> LogEntry:
        """The message as logged (mentions as names), the snowflake it replies to, and the
        person whose opt-out keeps it out (bot/gateway/refusals.py)."""
        hidden = await self.hidden_people(message)
        rendered = await self.mentions.render(message, visible(message)[0], hidden)
        return log_entry(message, rendered), self.refusals.about(message)

    def _dm_person(self, channel: Any, messages: Sequence[discord.Message]) -> Any:
        """Who a DM is with: the first of ``messages`` not written by the bot (None elsewhere)."""
        if not is_dm(channel):
            return None
        me = self.bot.user
        return next((m.author for m in messages if me is None or m.author.id != me.id), None)

    def _mark_dirty(self, chat_id: int) -> None:
        if self.services.scheduler is not None:
            self.services.scheduler.mark_dirty(chat_id)


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
