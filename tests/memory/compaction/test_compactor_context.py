"""What each compactor call is sent: a context of lines before every task's input (checked
against the tables at call time), and nothing erased once the erasure has committed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.clock import SimulatedClock
from memory.compaction.call_plan import lines_bytes
from memory.compaction.compactor import Compactor
from memory.compaction.summarizer import CompactTask, StillCurrent, SummaryBatch
from memory.engine import MemoryEngine
from memory.fakes.context_check import database_context_check
from memory.fakes.summarizer import FakeSummarizer
from memory.storage.models import MemoryRow
from tests.memory.helpers import SMALL, START, fill, make_engine, message, new_chat, settle

Sessions = async_sessionmaker[AsyncSession]
CANARY = "quokkacanary"
VICTIM = "Max"  # author_id 1001 in tests.memory.helpers
GUILD = 77


async def test_every_call_gets_only_lines_before_each_task_input(sessions: Sessions) -> None:
    summarizer = FakeSummarizer(node_bytes=SMALL.node_bytes, tries=SMALL.tries)
    engine, _, clock = make_engine(sessions, SMALL, summarizer)
    chat = await new_chat(engine)
    summarizer.context_check = database_context_check(sessions, chat)
    texts = [f"{'plans for the padel court on friday ' * (3 + k % 9)}#{k}" for k in range(260)]
    await fill(engine, clock, chat, [message(k, texts[k]) for k in range(260)])
    await settle(engine, clock, chat)
    assert summarizer.calls > 20 and summarizer.tasks > summarizer.calls  # multi-task calls ran
    assert summarizer.context_violations == 0  # strict: a violation would have raised already


async def test_the_shared_context_is_written_about_once_a_row(sessions: Sessions) -> None:
    """Every pass of a batch takes its lines before from the row as armed, and the shared
    context is the row's oldest lines: it changes when a batch's swap rewrites the row's start,
    not at every pass of a batch."""
    summarizer = FakeSummarizer(node_bytes=SMALL.node_bytes, tries=SMALL.tries)
    shared: list[tuple[str, ...]] = []

    class Contexts:
        async def summarize(
            self,
            context: Sequence[str],
            tasks: Sequence[CompactTask],
            *,
            still_current: StillCurrent | None = None,
        ) -> SummaryBatch:
            if lines_bytes(context) >= SMALL.min_context_bytes:
                shared.append(tuple(context))
            return await summarizer.summarize(context, tasks, still_current=still_current)

    engine, _, clock = make_engine(sessions, SMALL, Contexts())  # type: ignore[arg-type]
    chat = await new_chat(engine)
    summarizer.context_check = database_context_check(sessions, chat)
    texts = [f"{'plans for the padel court on friday ' * (3 + k % 9)}#{k}" for k in range(260)]
    await fill(engine, clock, chat, [message(k, texts[k]) for k in range(260)])
    await settle(engine, clock, chat)
    async with sessions() as session:
        swaps = await session.scalar(select(MemoryRow.swaps).where(MemoryRow.chat_id == chat))
    assert len(shared) > 100 and summarizer.context_violations == 0
    # 38 swaps here; the contexts change only with the swaps that follow a batch (6 contexts;
    # taken from the staged row at every pass of a batch instead, there were 12).
    assert (swaps or 0) > 30 and len(set(shared)) <= 6, (len(set(shared)), swaps)


class Recorder:
    """Wraps the fake model: the first call erases the victim (and the erasure commits), and
    every call that starts after that is recorded as the text the API would have received."""

    def __init__(self, inner: FakeSummarizer) -> None:
        self.inner = inner
        self.engine: MemoryEngine | None = None
        self.erased = False
        self.after_erasure: list[str] = []

    async def summarize(
        self,
        context: Sequence[str],
        tasks: Sequence[CompactTask],
        *,
        still_current: StillCurrent | None = None,
    ) -> SummaryBatch:
        if self.erased:
            sent = list(context) + [t.author + " " + t.text + " " + t.left + " " + t.right for t in tasks]
            self.after_erasure.append("\n".join(sent))
        elif self.engine is not None:
            await self.engine.erase_author(GUILD, 1001)
            self.erased = True
        return await self.inner.summarize(context, tasks, still_current=still_current)


async def test_work_planned_before_an_erasure_is_never_sent_after_it(sessions: Sessions) -> None:
    # 8 tasks planned at once (4 calls of 2); the lead call goes alone and erases, the rest follow.
    config = replace(SMALL, jobs=4)
    inner = FakeSummarizer(node_bytes=config.node_bytes, tries=config.tries)
    recorder = Recorder(inner)
    clock = SimulatedClock(START)
    engine = MemoryEngine(
        sessions, config, compactor=Compactor(sessions, config, recorder, clock), clock=clock
    )
    recorder.engine = engine
    chat = await new_chat(engine)
    # First a row of short lines, so the long messages after it have lines before them (a
    # cached context: its lead call goes alone, the rest after it).
    for k in range(40):
        await engine.append(chat, message(k, f"short note {k} about the padel court"))
    await engine.compact(chat, force_swap=True)
    for k in range(40, 70):
        author = VICTIM if k % 3 == 1 else None
        body = f"{CANARY} " * 80 if author else "tangerine " * 70
        await engine.append(chat, message(k, f"{body}{k}", author))
    await engine.compact(chat)  # arms: every message over 512 bytes is a model task
    assert recorder.erased and inner.calls >= 1
    await engine.compact(chat, until_idle=True, force_swap=True)
    assert recorder.after_erasure, "the compactor kept working after the erasure"
    assert not any(CANARY in sent for sent in recorder.after_erasure)
