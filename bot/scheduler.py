"""When the compactor runs: one APScheduler 3.11 interval job, in the bot process or in
`eva worker` (the same class, without the gateway).

Each tick runs ``compactor.run(chat)`` (build what is ready, then the swap check) for:

- chats whose memory row has staged or repair work (``chats_with_work``: a few rows);
- chats ingest marked since the last tick (:meth:`mark_dirty`, in the bot process);
- chats whose last message is newer than the previous tick (another process wrote it);
- every chat, at the first tick and every SWEEP_SECONDS, for what nobody marked (a backfill
  by another process, work left by a crash).

After an erasure or edit in this process, a tick also VACUUMs the tables (engine.purge, at
most once per PURGE_SECONDS), so erased words leave the table files within about a minute.

`eva run --no-compactor` ticks without compacting (``compact=False``): `eva worker` processes
build the memory, and the gateway's ticks still VACUUM after its own erasures, which only the
process that erased knows of.

The job is coalesced with one instance, and a tick still running when the next one is due is
simply not started twice. Tests call :meth:`step` to run exactly one tick, without waiting.
Several processes may tick at once: the compactor's per-chat advisory lock lets one build.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from memory import MemoryEngine, PassReport

log = structlog.get_logger(__name__)

TICK_SECONDS = 5.0  # a swap is due within a tick of the quiet half hour; new work waits <= 5 s
SWEEP_SECONDS = 300.0
CHATS_AT_ONCE = 4  # chats compacted in parallel; each call batch is capped by JOBS anyway
STOP_GRACE_SECONDS = 10.0  # a compactor call usually answers within this; then it is cancelled
# VACUUM after erasures at most this often: it scans every page changed since the last one.
PURGE_SECONDS = 60.0


@dataclass(slots=True)
class TickReport:
    chats: int = 0  # chats looked at
    calls: int = 0
    nodes: int = 0
    swaps: int = 0
    failed: int = 0  # chats whose pass raised (logged; tried again next tick)

    def add(self, report: PassReport) -> None:
        self.calls += report.calls
        self.nodes += report.model_nodes + report.free_nodes
        self.swaps += report.swaps


class CompactionScheduler:
    def __init__(
        self,
        engine: MemoryEngine,
        *,
        interval: float = TICK_SECONDS,
        sweep_every: float = SWEEP_SECONDS,
        chats_at_once: int = CHATS_AT_ONCE,
        compact: bool = True,
    ) -> None:
        if engine.compactor is None:
            raise ValueError("the scheduler needs an engine built with a compactor")
        self.engine, self.compactor, self.compact = engine, engine.compactor, compact
        self._next_purge = 0.0  # monotonic time
        self.interval, self.sweep_every = interval, sweep_every
        self._slots = asyncio.Semaphore(chats_at_once)
        self._dirty: set[int] = set()
        self._next_sweep = 0.0  # monotonic time; 0: sweep at the first tick
        self._last_tick_at: datetime | None = None
        self._scheduler: AsyncIOScheduler | None = None
        self._tick: asyncio.Task[TickReport] | None = None
        self._stopped = False

    def mark_dirty(self, chat_id: int) -> None:
        """A message was logged in this chat: look at it in the next tick."""
        self._dirty.add(chat_id)

    @property
    def running(self) -> bool:
        return self._scheduler is not None

    def start(self) -> None:
        """Start ticking; call from inside the running event loop."""
        if self._scheduler is not None:
            return
        # APScheduler logs every run at INFO (one line per 5 s): keep warnings only.
        logging.getLogger("apscheduler").setLevel(logging.WARNING)
        self._stopped = False
        scheduler = AsyncIOScheduler(timezone=UTC)
        scheduler.add_job(
            self._fire,
            "interval",
            seconds=self.interval,
            id="compact",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=max(1, int(self.interval)),
            next_run_time=datetime.now(UTC),
        )
        scheduler.start()
        self._scheduler = scheduler

    async def _fire(self) -> None:
        if self._stopped or (self._tick is not None and not self._tick.done()):
            return
        self._tick = asyncio.create_task(self.step(), name="compaction-tick")

    async def step(self) -> TickReport:
        """Run one tick now and return what it did."""
        report = TickReport()
        started = datetime.now(UTC)
        dirty, self._dirty = self._dirty, set()
        if not self.compact:
            await self._purge()
            return report
        try:
            chats = await self._chats_to_visit(dirty)
        except Exception as exc:  # the database is down: try again next tick
            self._dirty |= dirty
            log.warning("compactor.tick_failed", error=type(exc).__name__)
            return report
        self._last_tick_at = started
        report.chats = len(chats)
        await asyncio.gather(*(self._run_chat(chat_id, report) for chat_id in chats))
        await self._purge()
        if report.calls or report.swaps or report.failed:
            log.info(
                "compactor.tick",
                chats=report.chats,
                calls=report.calls,
                nodes=report.nodes,
                swaps=report.swaps,
                failed=report.failed,
            )
        return report

    async def _chats_to_visit(self, dirty: set[int]) -> list[int]:
        chats = set(dirty) | set(await self.compactor.chats_with_work())
        if time.monotonic() >= self._next_sweep:
            chats |= set(await self.engine.chat_ids())
            self._next_sweep = time.monotonic() + self.sweep_every
        elif self._last_tick_at is not None:
            # A minute of slack: clocks of two machines, and transactions in flight.
            since = self._last_tick_at - timedelta(seconds=60)
            chats |= set(await self.engine.chat_ids(active_since=since))
        return sorted(chats)

    async def _run_chat(self, chat_id: int, report: TickReport) -> None:
        async with self._slots:
            try:
                report.add(await self.compactor.run(chat_id))
            except Exception as exc:
                report.failed += 1
                self._dirty.add(chat_id)
                log.warning("compactor.chat_failed", chat_id=chat_id, error=type(exc).__name__)

    async def _purge(self) -> None:
        engine = self.engine
        if not engine.purge_due or time.monotonic() < self._next_purge:
            return
        self._next_purge = time.monotonic() + PURGE_SECONDS
        try:
            await engine.purge()
        except Exception as exc:  # the database is down: the flag stays set for a later tick
            log.warning("memory.purge_failed", error=type(exc).__name__)
            return
        log.info("memory.purged")

    async def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """Stop ticking; a tick in flight may finish within ``grace`` seconds, else it is
        cancelled (nothing half-written: each node is its own transaction, and results from
        before an erasure are discarded by the row version)."""
        self._stopped = True
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None and scheduler.running:
            scheduler.shutdown(wait=False)
        tick = self._tick
        if tick is None or tick.done():
            return
        done, _ = await asyncio.wait({tick}, timeout=grace)
        if not done:
            tick.cancel()
            await asyncio.gather(tick, return_exceptions=True)
            log.info("compactor.tick_cancelled")
