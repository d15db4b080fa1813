"""Ingest: every message people can see in a chat becomes one log entry, in order, once.

How (docs/design.md sections 4 and 10):

- The gateway handler only queues: each channel has an ordered queue of operations (append,
  edit, erase, backfill) drained by a short-lived task that ends when the queue is empty, so
  ingest never blocks the gateway and no task waits forever on an empty queue.
- A write that fails for a reason that goes away (the database down, its disk full, a
  cancelled or timed-out statement, a lock timeout, a deadlock: bot/gateway/ops.py, transient)
  is tried again, first after RETRY_SECONDS (1 s) then backing off to 8 s, and new messages
  wait in memory, at most MAX_BUFFERED (10,000, about 10 MB of typical messages) across all
  chats. A message that does not fit is dropped with a warning (ids only) and the channel
  gets a backfill operation, which fetches it from Discord's history once the database is
  back; after five minutes of failures a channel's waiting messages make way for such a
  backfill too. A message that can never be stored (after memory.storage.log.storable) is the one
  thing skipped, with a log line of ids.
- After a start, a reconnect or a resume, nothing is written until each logged channel has a
  backfill queued at the head of its queue: its history from the last logged snowflake comes
  first, then the live messages that arrived meanwhile (duplicates are skipped by snowflake).

Only what people can see is logged: messages of people and the bot's own replies; other
bots' messages only when IGNORE_BOTS is off; no system messages (joins, pins). Opted-out
people, the bot's replies to them, people being erased (bot/gateway/erasure_order.py) and paused
chats are not logged; that is checked when a message is written (bot/gateway/refusals.py), so
it applies to messages still waiting in the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import discord
import structlog

from bot.gateway.backfill import backfill_channel
from bot.gateway.chats import channel_for_chat, visible
from bot.gateway.mentions import MentionLookup
from bot.gateway.ops import (
    BACKFILL_AFTER_SECONDS,
    Append,
    Backfill,
    Barrier,
    ChannelQueue,
    DatabaseOutage,
    Edit,
    Erase,
    Op,
    Reconcile,
    leave_to_backfill,
    outage,
    parent_id,
    retry_delay,
    take,
    transient,
)
from bot.gateway.reconcile import run_page, window_start
from bot.gateway.refusals import Refusals
from bot.gateway.writer import LogWriter, skip_unstorable
from bot.services import Services
from memory import ErasureReport
from memory.errors import DatabaseUnavailable, StorageError

log = structlog.get_logger(__name__)

MAX_BUFFERED = 10_000
RETRY_SECONDS = 1.0
MAX_DRAINS = 8  # channels written at once: the database pool has 10 connections (+10 overflow)
# Appends waiting in a channel's queue are written in one transaction, up to this many: at
# ~0.3 ms a statement the chat row stays locked for ~80 ms at most.
MAX_BATCH = 256

T = TypeVar("T")


async def _as_is(waiting: Awaitable[None]) -> None:
    await waiting


class Ingest:
    def __init__(
        self,
        bot: discord.Client,
        services: Services,
        *,
        max_buffered: int = MAX_BUFFERED,
        retry_seconds: float = RETRY_SECONDS,
        retry_wait: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self.bot, self.services = bot, services
        self.engine, self.settings = services.engine, services.settings
        self.max_buffered, self.retry_seconds = max_buffered, retry_seconds
        # Tests map these to their simulator's declared external wait.
        self.retry_wait = retry_wait or asyncio.sleep
        self.wait_outside: Callable[[Awaitable[None]], Awaitable[None]] = _as_is
        self.queues: dict[int, ChannelQueue] = {}
        self.buffered = 0  # Append operations waiting or in flight
        self.dropped = 0
        self.is_open = False  # closed until the first backfill is queued (on_ready)
        self.held_guilds: set[int] = set()
        self.newest_seen = 0  # the newest snowflake seen on the gateway: Discord's time, roughly
        self.refusals = Refusals(bot, self.engine, lambda: self.newest_seen)
        self.fences = self.refusals.fences  # erasures in progress (bot/gateway/erasure_order.py)
        self.mentions = MentionLookup(bot)
        self.writer = LogWriter(bot, services, self.refusals, self.mentions)
        self._drains = asyncio.Semaphore(MAX_DRAINS)
        self.outage = DatabaseOutage()
        self._gate_opened = asyncio.Event()  # set (and replaced) each time writing may resume
        self._closed = False

    # --- what gets queued (called from gateway handlers; never awaits)
    def queue_message(self, message: discord.Message) -> bool:
        """Queue a live message; False when it is not logged here or had to be dropped."""
        self.newest_seen = max(self.newest_seen, message.id)
        if self._closed or not self.writer.loggable(message):
            return False
        q = self.queue_for(message.channel, message.guild.id if message.guild else None)
        if self.buffered >= self.max_buffered:
            self.dropped += 1
            log.warning("ingest.buffer_full", channel_id=q.channel_id, message_id=message.id)
            if not q.recovery_pending:
                after = q.last_accepted if q.last_accepted is not None else message.id - 1
                q.recovery_pending = True
                self.push(q, Backfill(after=after))
            return False
        self.buffered += 1
        q.last_accepted = message.id
        self.push(q, Append(message))
        return True

    def queue_edit(self, channel: Any, guild_id: int | None, message: discord.Message) -> None:
        content, tags = visible(message)
        self.push(self.queue_for(channel, guild_id), Edit(message.id, content, tags, message))

    def queue_erase(self, channel: Any, guild_id: int | None, message_ids: set[int]) -> None:
        if message_ids:
            self.push(self.queue_for(channel, guild_id), Erase(frozenset(message_ids)))

    def queue_reconcile(self, channel: Any, guild_id: int | None, op: Reconcile) -> None:
        self.push(self.queue_for(channel, guild_id), op)

    def queue_for(self, channel: Any, guild_id: int | None) -> ChannelQueue:
        q = self.queues.get(channel.id)
        if q is None:
            q = self.queues[channel.id] = ChannelQueue(channel.id, guild_id, parent_id(channel), channel)
            q.idle.set()
        elif not isinstance(channel, discord.PartialMessageable) or isinstance(q.channel, type(channel)):
            q.channel = channel
        return q

    def push(self, q: ChannelQueue, op: Op, *, first: bool = False) -> None:
        if first:
            q.ops.appendleft(op)
        else:
            q.ops.append(op)
        q.idle.clear()
        self._kick(q)

    # --- draining
    def _may_run(self, q: ChannelQueue) -> bool:
        return self.is_open and not self._closed and q.guild_id not in self.held_guilds

    def _kick(self, q: ChannelQueue) -> None:
        if q.task is None and q.ops and self._may_run(q):
            q.task = asyncio.create_task(self._drain(q), name=f"ingest-{q.channel_id}")

    def kick_all(self) -> None:
        for q in list(self.queues.values()):
            self._kick(q)

    async def _drain(self, q: ChannelQueue) -> None:
        try:
            async with self._drains:
                while q.ops and self._may_run(q):
                    batch = take(q, MAX_BATCH)
                    op = batch[0]
                    if isinstance(op, Barrier):
                        op.reach()  # everything queued before it is handled
                        continue
                    if isinstance(op, Backfill) and op.chat_id is None:
                        q.recovery_pending = False
                    try:
                        await self._apply(q, op, batch)
                    except Exception as exc:
                        if self._closed:
                            return  # shutting down (Discord's session is closed): the next start backfills
                        if isinstance(exc, StorageError):
                            self.services.metrics.database_errors.labels(kind=type(exc).__name__).inc()
                        if transient(exc):
                            q.ops.extendleft(reversed(batch))  # keep the order: these first when back
                            await self._retry_later(q, exc)
                            continue
                        if len(batch) > 1:
                            q.ops.extendleft(reversed(batch))
                            q.singly = len(batch)  # find the one that fails; write the others
                            continue
                        skip_unstorable(q, op, exc)
                    q.failures, q.unwritable_for = 0, 0.0
                    self.buffered -= sum(isinstance(done, Append) for done in batch)
                    self.outage.ended(self.buffered, self.dropped)
        finally:
            q.task = None
            if not q.ops:
                q.idle.set()

    async def _retry_later(self, q: ChannelQueue, exc: Exception) -> None:
        """Wait before the head op is tried again (backing off); after BACKFILL_AFTER_SECONDS of
        failures the channel's waiting messages make way for a backfill."""
        q.failures += 1
        if outage(exc):
            self.outage.started(exc, self.buffered)
        else:  # one statement of this chat (a lock timeout, a deadlock): the database is up
            log.info(
                "ingest.write_retried",
                channel_id=q.channel_id,
                error=type(exc).__name__,
                sqlstate=getattr(exc, "sqlstate", None),
                failures=q.failures,
            )
        if q.unwritable_for >= BACKFILL_AFTER_SECONDS:
            self._leave_to_backfill(q)
        wait = retry_delay(q.failures, self.retry_seconds)
        q.unwritable_for += wait
        await self.retry_wait(wait)

    def _leave_to_backfill(self, q: ChannelQueue) -> None:
        moved = leave_to_backfill(q)
        if moved:
            self.buffered -= moved
            log.warning("ingest.left_to_backfill", channel_id=q.channel_id, messages=moved)

    async def retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` until the database answers (for work outside the queues)."""
        failures = 0
        while True:
            try:
                result = await call()
            except Exception as exc:
                if not transient(exc):
                    raise
                failures += 1
                self.outage.started(exc, self.buffered)
                await self.retry_wait(retry_delay(failures, self.retry_seconds))
                continue
            self.outage.ended(self.buffered, self.dropped)
            return result

    # --- writing (bot/gateway/writer.py)
    async def _apply(self, q: ChannelQueue, op: Op, batch: list[Op]) -> None:
        """One batch taken from the head of the queue: appends, else the one op ``op``."""
        if isinstance(op, Append):
            await self.writer.append_batch(q, [b for b in batch if isinstance(b, Append)])
        elif isinstance(op, Edit | Erase):
            await self.writer.change(q, op)
        elif isinstance(op, Backfill):
            await backfill_channel(self.writer, q, op)
        elif isinstance(op, Reconcile):
            following = await run_page(self.writer, q, op)
            if following is not None:
                self.push(q, following)  # behind what arrived meanwhile: live messages keep flowing

    async def refresh_opt_outs(self, guild_id: int | None) -> None:
        """The opt-out list of a guild (None: DMs) changed (/forget-me, /remember-me)."""
        await self.refusals.refresh(guild_id)

    async def shown_text(self, message: discord.Message, content: str) -> str:
        """``content`` with its mentions as names, as ingest logs it, for a message that is shown
        to the model without being logged (its author opted out, or the chat is paused)."""
        return (await self.mentions.render(message, content, await self.writer.hidden_people(message))).text

    # --- flush and lifecycle
    async def flush(self, chat_id: int | None = None, timeout: float | None = None) -> bool:  # noqa: ASYNC109
        """Wait until everything queued for this chat (every chat: None, or a chat not seen by
        ingest yet) is written; False when ``timeout`` seconds passed first (the reply cog
        bounds its wait this way: while the database is down nothing gets written)."""
        channel_id = self.writer.channel_of_chat.get(chat_id) if chat_id is not None else None
        if channel_id is not None:
            queues = [self.queues[channel_id]] if channel_id in self.queues else []
        else:
            queues = list(self.queues.values())
        waits = [q.idle.wait() for q in queues if not q.idle.is_set()]
        if not waits:
            return True
        try:
            async with asyncio.timeout(timeout):
                await asyncio.gather(*waits)
        except TimeoutError:
            return False
        return True

    def hold(self, guild_id: int | None = None) -> None:
        """Stop writing (one guild's channels, or all) until :meth:`resync` has queued backfills."""
        if guild_id is None:
            self.is_open = False
        else:
            self.held_guilds.add(guild_id)

    @property
    def closed(self) -> bool:
        return self._closed

    def when_down(self) -> asyncio.Future[None]:
        """A future resolved once writes fail for the whole database (at once if they do now)."""
        return self.outage.when_down()

    def opened(self) -> None:
        """Writing resumed (resync has queued its backfills): wake who waits for it."""
        self._gate_opened.set()
        self._gate_opened = asyncio.Event()

    async def gate_open(self, guild_id: int | None) -> None:
        """Return once this guild's channels (None: DMs) are written to again."""
        while self._closed or not self.is_open or (guild_id is not None and guild_id in self.held_guilds):
            if self._closed:
                raise DatabaseUnavailable("ingest stopped")
            await self._gate_opened.wait()

    async def resync(self, guild_id: int | None = None, *, reconcile: bool = True) -> int:
        """Queue a backfill at the head of each logged channel's queue (of one guild, or all),
        then (``reconcile``: events were lost) a comparison of the window around the outage
        with Discord (bot/gateway/reconcile.py), then write again. Returns the number of channels queued."""
        engine = self.engine
        try:
            chats = await self.retrying(engine.logged_discord_chats)
            # Read before any backfill runs: the newest message logged before the outage.
            last_at = await self.retrying(lambda: engine.last_message_times([c.id for c in chats]))
        except Exception as exc:  # a bug must not keep the gate shut: log live messages anyway
            log.error("ingest.resync_failed", guild_id=guild_id, error=type(exc).__name__)
            chats, last_at = [], {}
        queued = 0
        for info in chats:
            if guild_id is not None and info.guild_id != guild_id:
                continue
            if info.paused or (info.kind == "dm" and not self.settings.reply_in_dms):
                continue
            channel = channel_for_chat(self.bot, info)
            if channel is None:
                continue
            self.writer.channel_of_chat[info.id] = channel.id
            q = self.queue_for(channel, info.guild_id)
            self.push(q, Backfill(chat_id=info.id), first=True)
            after = window_start(last_at.get(info.id), self.settings.reconcile_recent) if reconcile else None
            if after is not None:
                q.ops.insert(1, Reconcile(info.id, after))  # right behind its backfill, before live events
            queued += 1
        if guild_id is None:
            self.is_open = True
        else:
            self.held_guilds.discard(guild_id)
        self.opened()
        self.kick_all()
        return queued

    async def forget_channels(
        self, match: Callable[[ChannelQueue], bool], forget: Callable[[], Awaitable[ErasureReport]]
    ) -> None:
        """A channel, thread or guild is gone: drop what waits for it, then erase its memory."""
        for key, q in list(self.queues.items()):
            if match(q):
                self.buffered -= sum(isinstance(op, Append) for op in q.ops)
                for op in q.ops:
                    if isinstance(op, Barrier):
                        op.reach()  # nothing is left to wait for: the chat goes with its memory
                q.ops.clear()
                if q.task is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.shield(q.task)
                q.idle.set()
                self.queues.pop(key, None)
        report = await self.retrying(forget)
        log.info("ingest.forgot", chats=report.chats, messages=report.messages)

    async def close(self, grace: float = 5.0) -> None:
        """Finish what is being written (up to ``grace`` seconds), then stop; what is still queued
        is fetched by the backfill of the next start."""
        self._closed = True
        # An erasure waiting for ingest wakes and sees it stopped (bot/gateway/erasure_order.py).
        self.opened()
        for q in self.queues.values():
            for op in q.ops:
                if isinstance(op, Barrier):
                    op.reach()
        tasks = [q.task for q in self.queues.values() if q.task is not None]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self.buffered:
            log.info("ingest.closed_with_queue", buffered=self.buffered)
