"""What ingest queues: one ordered queue of operations per channel (bot/gateway/ingest.py drains
them), which failures are retried rather than skipped, and how long to wait between tries."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import discord
import structlog
from discord import DiscordServerError

from memory.errors import DatabaseUnavailable, TransientStorageError

log = structlog.get_logger("bot.gateway.ingest")

# Waits between tries of a write that failed for a reason that goes away: 1 s, 2 s, 4 s, then
# every 8 s. The first try comes soon (a database restart takes seconds and a person may be
# waiting for a reply); a database that stays unwritable (a full disk) costs one failed
# transaction per channel every 8 s, and is written to within 8 s of being freed.
MAX_RETRY_SECONDS = 8.0
# After five minutes of failed tries the database needs a person (a full disk): the channel's
# queued messages leave memory and a backfill from its last logged message takes their place,
# which fetches them from Discord once writes work again (nothing is lost, memory stays small).
BACKFILL_AFTER_SECONDS = 300.0


def transient(exc: BaseException) -> bool:
    """A failure that goes away by itself, so the same work is tried again: the database or
    Discord is down or restarting (connection refused or dropped, pool exhausted, 5xx), or the
    database refused for now (disk full, a cancelled or timed-out statement, a lock timeout, a
    deadlock or serialization failure: memory.storage.database.storage_error)."""
    return isinstance(
        exc, TransientStorageError | OSError | TimeoutError | aiohttp.ClientError | DiscordServerError
    )


def outage(exc: BaseException) -> bool:
    """A transient failure of the whole database (down, or out of disk or memory), as opposed
    to one statement of one chat (a lock timeout, a deadlock), which is logged per channel."""
    if isinstance(exc, DatabaseUnavailable | OSError):
        return True
    code = getattr(exc, "sqlstate", None)
    return isinstance(code, str) and code.startswith("53")


class DatabaseOutage:
    """Whether ingest's writes fail for the whole database now (:func:`outage`), logged once
    when it starts and once when it ends, and who waits to hear that it started (an erasure:
    bot/gateway/erasure_order.py)."""

    def __init__(self) -> None:
        self.down = False
        self._waiters: list[asyncio.Future[None]] = []  # resolved when writes start failing

    def started(self, exc: Exception, buffered: int) -> None:
        if self.down:
            return
        self.down = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()
        log.warning(
            "ingest.database_unavailable",
            error=type(exc).__name__,
            sqlstate=getattr(exc, "sqlstate", None),
            buffered=buffered,
        )

    def ended(self, buffered: int, dropped: int) -> None:
        if self.down:
            self.down = False
            log.info("ingest.database_back", buffered=buffered, dropped=dropped)

    def when_down(self) -> asyncio.Future[None]:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.down:
            waiter.set_result(None)
        else:
            self._waiters.append(waiter)
        return waiter


def retry_delay(failures: int, first: float) -> float:
    """Seconds to wait after the ``failures``-th failure in a row (1-based)."""
    return min(first * 2 ** max(failures - 1, 0), max(MAX_RETRY_SECONDS, first))


@dataclass(slots=True)
class Append:
    message: discord.Message


@dataclass(slots=True)
class Edit:
    message_id: int
    content: str
    attachments: tuple[str, ...]
    message: discord.Message | None = None  # to show its mentions as names (bot/gateway/mentions.py)


@dataclass(slots=True)
class Erase:
    message_ids: frozenset[int]


@dataclass(slots=True)
class Backfill:
    chat_id: int | None = None  # None: resolve (and create) the chat from the channel
    after: int | None = None  # start here when the chat has nothing logged yet


@dataclass(slots=True)
class Reconcile:
    """One page of reconciliation with Discord's history (bot/gateway/reconcile.py)."""

    chat_id: int
    after: int  # snowflake, exclusive
    walk: bool = False  # a page of the background walk (else the window after a reconnect)


@dataclass(slots=True)
class Barrier:
    """Resolved when the drain reaches it: everything queued before it has been handled (an
    erasure waits for this: bot/gateway/erasure_order.py)."""

    reached: asyncio.Future[None]

    def reach(self) -> None:
        if not self.reached.done():
            self.reached.set_result(None)


Op = Append | Edit | Erase | Backfill | Reconcile | Barrier


@dataclass(eq=False)
class ChannelQueue:
    channel_id: int
    guild_id: int | None
    parent_id: int | None
    channel: Any  # the latest Messageable seen for this channel (history, chat key)
    ops: deque[Op] = field(default_factory=deque)
    task: asyncio.Task[None] | None = None
    recovery_pending: bool = False  # a Backfill for dropped messages is queued
    last_accepted: int | None = None  # snowflake of the newest message queued
    singly: int = 0  # ops to write one at a time: their batch failed for a non-transient reason
    failures: int = 0  # transient failures of the head op in a row
    unwritable_for: float = 0.0  # seconds waited since the head op first failed
    idle: asyncio.Event = field(default_factory=asyncio.Event)


def parent_id(channel: Any) -> int | None:
    return channel.parent_id if isinstance(channel, discord.Thread) else None


def leave_to_backfill(q: ChannelQueue) -> int:
    """The channel's waiting messages leave memory: one backfill, where the first of them was,
    fetches them (and the others after it) from Discord instead. Returns how many left."""
    appends = [op for op in q.ops if isinstance(op, Append)]
    if not appends:
        return 0
    kept: list[Op] = []
    for op in q.ops:
        if not isinstance(op, Append):
            kept.append(op)
        elif not any(isinstance(k, Backfill) for k in kept):  # a backfill ahead fetches them too
            kept.append(Backfill(after=min(a.message.id for a in appends) - 1))
    q.ops.clear()
    q.ops.extend(kept)
    q.recovery_pending = True
    return len(appends)


def take(q: ChannelQueue, max_batch: int) -> list[Op]:
    """The head op; when it is an Append, every Append queued right behind it too (up to
    ``max_batch``): the messages that arrived while the last write was committing."""
    batch = [q.ops.popleft()]
    if q.singly:
        q.singly -= 1
        return batch
    while isinstance(batch[0], Append) and q.ops and isinstance(q.ops[0], Append):
        if len(batch) == max_batch:
            break
        batch.append(q.ops.popleft())
    return batch
