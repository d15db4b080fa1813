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
    is_dm,
    message_to_new,
    replied_snowflake,
    visible,
)
from bot.gateway.mentions import MentionLookup
from bot.gateway.ops import Append, ChannelQueue, Edit, Erase, Op
from bot.gateway.refusals import Refusals
from bot.services import Services
from memory import NewMessage
from memory.errors import DuplicateEntry

log = structlog.get_logger("bot.gateway.ingest")


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
        """Messages of one channel in one transaction, in order: one chat lookup, one statement
        per message. Who may not be logged is decided first, so a DM chat is never made for
        messages that are all refused (a DM erased meanwhile)."""
        channel, messages = batch[0].message.channel, [op.message for op in batch]
        items = [item for m in messages if (item := await self._loggable_item(m)) is not None]
        if not items and is_dm(channel):
            return
        chat_id = await self.chat_of(q, channel, self._dm_person(channel, messages))
        if chat_id is None:
            return
        try:
            indexes = await self.engine.append_replies(chat_id, items)
        except DuplicateEntry:
            if len(batch) > 1:
                raise  # one at a time, then: the others must still be written
            return  # the same snowflake, appended by a racing writer
        if any(index is not None for index in indexes):
            self._mark_dirty(chat_id)

    async def store(self, chat_id: int, message: discord.Message) -> int | None:
        """Log one message (a backfill's) unless it is refused; its index, or None (refused or
        duplicate)."""
        item = await self._loggable_item(message)
        if item is None:
            return None
        try:
            # One transaction: the reply target found under the chat's lock, then the append.
            (index,) = await self.engine.append_replies(chat_id, [item])
        except DuplicateEntry:
            return None  # the same snowflake, appended by a racing writer
        if index is not None:
            self._mark_dirty(chat_id)
        return index

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

    async def _loggable_item(self, message: discord.Message) -> tuple[NewMessage, int | None] | None:
        """The message as logged (mentions as names) and the snowflake it replies to; None: its
        author opted out or is being erased."""
        if await self.refusals.refuses(message):
            return None
        hidden = await self.hidden_people(message)
        rendered = await self.mentions.render(message, visible(message)[0], hidden)
        return message_to_new(message, None, rendered), replied_snowflake(message)

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
