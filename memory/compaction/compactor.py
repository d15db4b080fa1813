"""The compactor: runs the model tasks the planner hands out, up to JOBS calls at once.

One builder per chat across processes: a pass holds a Postgres advisory lock on the chat
(a second worker skips that chat), and the unique key on (chat, level, index) turns any
duplicate build into a no-op. Results computed before an erasure or edit are thrown away
(the row version moved), so no line built from erased words is ever written.

A failed node is retried after RETRY (10 s), forever, and reported once: the next reply
reads these lines, so the compactor must catch up fast, not back off for minutes. A node that
failed inside a multi-task call is retried alone. A rate limit (429) or overload (529) is
different: it is the key's, shared with replies, so all compaction pauses for the API's
``retry-after`` (at least RETRY) and replies, which never wait on this pause, keep the quota.

Calls are planned by memory/compaction/call_plan.py: one context per call, only lines before every task's
input. The row version is read again right before each request of a call (its first, and every
too-long retry the summarizer sends in the same conversation), so work planned before an
erasure is dropped and no erased line or message is sent once the erasure has committed.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.clock import Clock
from memory.compaction.call_plan import ContextGroup, plan_calls
from memory.compaction.call_store import CallStore, CallWrite, node_writes
from memory.compaction.cards import CardBuilder
from memory.compaction.chat_hold import ChatHold, hold_chat
from memory.compaction.node_cache import NodeCache
from memory.compaction.planner import PlannedTask, needs_pass, plan_chat
from memory.compaction.summarizer import (
    CallUsage,
    CardWriter,
    Summarizer,
    SummarizerError,
    SummaryBatch,
)
from memory.config import MemoryConfig
from memory.pricing import PriceTable
from memory.storage.models import Chat, MemoryRow
from memory.storage.tree_nodes import NodeRecord, NodeWrite
from memory.tree.node import Node, address

log = structlog.get_logger(__name__)

RECENT_ERRORS = 200  # the compactor's last failures, by kind, for the dashboard's compactor page


@dataclass(frozen=True, slots=True)
class CompactorFailure:
    at: datetime
    chat_id: int
    kind: str  # "rate limited", "model error", "empty line": never the model's or a message's words


@dataclass(slots=True)
class PassReport:
    skipped: bool = False  # another worker holds this chat
    calls: int = 0
    failed_calls: int = 0
    model_nodes: int = 0
    free_nodes: int = 0
    discarded: int = 0  # results thrown away because an erasure moved the row
    swaps: int = 0
    forced_swaps: int = 0
    batches: int = 0  # batch merges that finished (each brings a row down to VIEW_LOW)
    usage: CallUsage = field(default_factory=CallUsage)
    card_calls: int = 0  # people-card calls (one per chat and quiet stretch at most)
    cards: int = 0  # cards written
    card_usage: CallUsage = field(default_factory=CallUsage)


class Compactor:
    """Builds the summary tree of each chat: plans a pass, sends the model tasks (JOBS calls at
    once, paused while the key is rate limited), writes the lines and retries failed nodes."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        config: MemoryConfig,
        summarizer: Summarizer,
        clock: Clock,
        *,
        prices: PriceTable | None = None,
    ) -> None:
        self.sessions, self.cfg, self.summarizer, self.clock = sessions, config, summarizer, clock
        self.prices = prices or PriceTable()
        self._jobs = asyncio.Semaphore(config.jobs)
        self._caches: dict[int, NodeCache] = {}
        self._retry_at: dict[tuple[int, Node], datetime] = {}
        self._reported: set[tuple[int, Node]] = set()
        self._waiting: set[int] = set()  # chats with nodes waiting out RETRY
        self._alone: set[tuple[int, Node]] = set()  # failed inside a multi-task call
        # chat -> (version, sticky contexts by tier): kept between plans of one pass
        self._contexts: dict[int, tuple[int, dict[int, tuple[str, ...]]]] = {}
        self._holds: dict[int, ChatHold] = {}  # chats this process is running a pass on
        self._stores: dict[int, CallStore] = {}
        self.paused_until: datetime | None = None  # rate limited: no call before this
        self.failures: deque[CompactorFailure] = deque(maxlen=RECENT_ERRORS)
        # The compactor's model writes the people cards too, when it can (every summarizer of
        # ours does; a test's stand-in may not).
        self.cards: CardBuilder | None = None
        if isinstance(summarizer, CardWriter):
            self.cards = CardBuilder(sessions, config, summarizer, clock, self.prices)

    def paused(self) -> bool:
        return self.paused_until is not None and self.clock.now() < self.paused_until

    def pause(self, seconds: float, reason: str) -> None:
        """Stop all compaction calls for ``seconds`` (at least RETRY): the key is rate limited."""
        wait = max(seconds, self.cfg.retry_seconds)
        until = self.clock.now() + timedelta(seconds=wait)
        if self.paused_until is None or until > self.paused_until:
            self.paused_until = until
            log.warning("compactor.paused", reason=reason, seconds=round(wait, 1))

    @asynccontextmanager
    async def _transaction(self, chat_id: int) -> AsyncIterator[AsyncSession]:
        """A session in a transaction: on the pass's write connection while one is held."""
        hold = self._holds.get(chat_id)
        if hold is not None:
            async with hold.transaction() as session:
                yield session
            return
        async with self.sessions() as session, session.begin():
            yield session

    def _blocked(self, chat_id: int, now: datetime) -> set[Node]:
        return {node for (chat, node), at in self._retry_at.items() if chat == chat_id and at > now}

    async def _plan(
        self, chat_id: int, busy: set[Node], force_swap: bool
    ) -> tuple[list[PlannedTask], bool, int, PassReport]:
        report = PassReport()
        async with self._transaction(chat_id) as session:
            cache = self._caches.get(chat_id)
            if cache is None:  # the zone is the one the cache was made with, as before
                tz = await session.scalar(select(Chat.timezone).where(Chat.id == chat_id)) or "UTC"
                cache = self._caches[chat_id] = NodeCache(chat_id, tz)
            now = self.clock.now()
            plan = await plan_chat(
                session,
                self.cfg,
                cache,
                now,
                busy=busy,
                blocked=self._blocked(chat_id, now),
                force_swap=force_swap,
            )
        report.free_nodes, report.swaps = plan.free_built, int(plan.swapped)
        report.forced_swaps, report.batches = int(plan.forced), int(plan.batched)
        return plan.tasks, plan.waiting, plan.version, report

    async def run(self, chat_id: int, *, until_idle: bool = False, force_swap: bool = False) -> PassReport:
        """Build what is ready for this chat; with ``until_idle``, keep going (waiting out
        retries) until nothing is left. Returns what was done."""
        total = PassReport()
        if not force_swap and chat_id not in self._waiting:
            async with self.sessions() as session:
                if not await needs_pass(session, self.cfg, chat_id, self.clock.now()):
                    return total
        async with hold_chat(self.sessions.kw["bind"], chat_id) as hold:
            if hold is None:
                total.skipped = True
                return total
            if chat_id in self._caches:
                self._caches[chat_id].begin_hold()
            self._holds[chat_id] = hold
            try:
                return await self._passes(chat_id, until_idle, force_swap, total)
            finally:
                del self._holds[chat_id]

    async def _passes(
        self, chat_id: int, until_idle: bool, force_swap: bool, total: PassReport
    ) -> PassReport:
        """Plan and run passes while the chat is held, until nothing is left to start now."""
        while True:
            tasks, waiting, version, report = await self._plan(chat_id, set(), force_swap)
            total.free_nodes += report.free_nodes
            total.swaps += report.swaps
            total.forced_swaps += report.forced_swaps
            total.batches += report.batches
            if tasks and self.paused():
                waiting = True  # rate limited: the free work is done, the calls wait
            elif tasks:
                await self._run_tasks(chat_id, tasks, version, total)
                continue
            if waiting and until_idle:
                await self._wait_for_retry(chat_id)
                continue
            if waiting:
                self._waiting.add(chat_id)
            else:
                self._waiting.discard(chat_id)
                await self._build_cards(chat_id, total)
            return total

    async def _build_cards(self, chat_id: int, report: PassReport) -> None:
        """The chat's people cards when they are due and the chat is quiet (memory/compaction/cards.py)."""
        if self.cards is None or self.paused():
            return
        done = await self.cards.run(chat_id)
        if done.failure is not None:
            report.failed_calls += 1
            if done.failure.retry_after is not None or done.failure.rate_limited:
                self.pause(done.failure.retry_after or 0.0, str(done.failure))
        report.card_calls += done.calls
        report.card_usage.add(done.usage)
        report.cards += done.cards
        report.discarded += done.discarded

    async def _wait_for_retry(self, chat_id: int) -> None:
        pending = [at for (chat, _), at in self._retry_at.items() if chat == chat_id]
        if self.paused() and self.paused_until is not None:
            pending.append(self.paused_until)
        delay = (min(pending) - self.clock.now()).total_seconds() if pending else self.cfg.retry_seconds
        await self.clock.sleep(max(delay, 0.01))

    async def _run_tasks(
        self, chat_id: int, tasks: Sequence[PlannedTask], version: int, report: PassReport
    ) -> None:
        # Kept across swaps too: plan_calls reuses a context only while its lines are, whole and
        # in order, row lines before the tasks' inputs now, so nothing erased can come back.
        known = self._contexts.get(chat_id)
        sticky = known[1] if known is not None else {}
        groups, keep = plan_calls(
            tasks,
            per_call=self.cfg.tasks_per_call,
            context_bytes=self.cfg.context_bytes,
            min_context_bytes=self.cfg.min_context_bytes,
            sticky=sticky,
            alone={node for chat, node in self._alone if chat == chat_id},
            shared=self.cfg.shared_context,
        )
        self._contexts[chat_id] = (version, keep)
        await asyncio.gather(*(self._run_group(chat_id, g, version, report) for g in groups))

    async def _run_group(self, chat_id: int, group: ContextGroup, version: int, report: PassReport) -> None:
        """The lead call alone (it writes the context to the prompt cache), then the rest at
        once (they read it). Without a context there is nothing to cache (the system prompt
        alone is ~700 tokens, under every model's minimum): all calls go at once."""
        lead, *rest = group.calls
        if not group.context:
            rest, lead = group.calls, []
        if lead:
            await self._call(chat_id, group.context, lead, version, report)
        await asyncio.gather(*(self._call(chat_id, group.context, call, version, report) for call in rest))

    async def _current_version(self, chat_id: int) -> int | None:
        hold = self._holds.get(chat_id)
        if hold is not None:
            return await hold.version()
        async with self.sessions() as session:
            return await session.scalar(select(MemoryRow.version).where(MemoryRow.chat_id == chat_id))

    async def _call(
        self,
        chat_id: int,
        context: tuple[str, ...],
        group: list[PlannedTask],
        version: int,
        report: PassReport,
    ) -> None:
        """One model call for ``group``: sent only while the row version holds, its lines
        written only if it still holds once they are back."""
        batch = await self._summarize(chat_id, context, group, version, report)
        if batch is None:
            return
        writes = node_writes(self._answered(chat_id, group, batch, report), batch)
        store = self._stores.setdefault(chat_id, CallStore(chat_id, self.prices))
        call = CallWrite(writes, batch.usage, version)
        inserted = await store.store(lambda: self._transaction(chat_id), call)
        if inserted is None:
            report.discarded += len(writes)
            return
        report.model_nodes += inserted  # after the await: concurrent calls share the report
        self._built(chat_id, writes, version)

    async def _summarize(
        self,
        chat_id: int,
        context: tuple[str, ...],
        group: list[PlannedTask],
        version: int,
        report: PassReport,
    ) -> SummaryBatch | None:
        """The model's answer for ``group``, one of JOBS calls at once; None when the call is
        not sent (paused, or the row moved) or fails (its nodes wait out RETRY)."""
        async with self._jobs:
            if self.paused():
                return None  # planned before a rate limit: planned again once the pause is over

            # Read right before sending: an erasure (or a swap) committed since planning moved
            # the version, and this call may carry the erased words. Drop it unsent; the
            # summarizer asks again before each further request of the call.
            async def still_current() -> bool:
                return await self._current_version(chat_id) == version

            if not await still_current():
                report.discarded += len(group)
                return None
            try:
                return await self.summarizer.summarize(
                    context, [t.task for t in group], still_current=still_current
                )
            except SummarizerError as exc:
                report.failed_calls += 1
                if exc.retry_after is not None or exc.rate_limited:
                    self.pause(exc.retry_after or 0.0, str(exc))
                kind = "rate limited" if exc.rate_limited else "model error"
                self._failed(chat_id, [t.node for t in group], str(exc), kind)
                return None

    def _answered(
        self, chat_id: int, group: list[PlannedTask], batch: SummaryBatch, report: PassReport
    ) -> list[tuple[PlannedTask, str, int]]:
        """Count the call; the tasks it answered, each with its line and tries. An empty line
        is a failed node, retried alone when it shared the call."""
        report.calls += 1
        report.usage.add(batch.usage)
        done = [
            (t, line, tries) for t, line, tries in zip(group, batch.lines, batch.tries, strict=True) if line
        ]
        empty = [t.node for t, line in zip(group, batch.lines, strict=True) if not line]
        self._failed(chat_id, empty, "empty line", "empty line")
        if len(group) > 1:
            self._alone.update((chat_id, node) for node in empty)
        return done

    def _built(self, chat_id: int, writes: Sequence[NodeWrite], version: int) -> None:
        """The written nodes are done: no retry is pending or reported for them, and this
        chat's node cache learns them while its version still holds."""
        cache = self._caches.get(chat_id)
        for w in writes:
            self._retry_at.pop((chat_id, w.node), None)
            self._reported.discard((chat_id, w.node))
            self._alone.discard((chat_id, w.node))
            if cache is not None and cache.version == version:
                cache.add(NodeRecord(w.node, w.text, w.first_at, w.last_at, True))

    def _failed(self, chat_id: int, nodes: Sequence[Node], reason: str, kind: str) -> None:
        if nodes:
            self.failures.append(CompactorFailure(self.clock.now(), chat_id, kind))
        retry_at = self.clock.now() + timedelta(seconds=self.cfg.retry_seconds)
        if self.paused_until is not None and self.paused_until > retry_at:
            retry_at = self.paused_until
        for node in nodes:
            key = (chat_id, node)
            self._retry_at[key] = retry_at
            if key not in self._reported:
                self._reported.add(key)
                log.warning(
                    "compactor.node_failed",
                    chat_id=chat_id,
                    node=address(node),
                    reason=reason,
                    retry_in=self.cfg.retry_seconds,
                )

    async def chats_with_work(self) -> list[int]:
        """Chats whose row has staged, repair or card work (a few rows of memory_rows)."""
        async with self.sessions() as session:
            work = MemoryRow.staged.is_not(None) | MemoryRow.needs_repair
            if self.cards is not None and self.cfg.people_cards > 0:
                work = work | MemoryRow.cards_due  # people cards waiting for a quiet chat
            rows = await session.scalars(select(MemoryRow.chat_id).where(work))
            return list(rows.all())
