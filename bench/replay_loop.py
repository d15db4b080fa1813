"""One replay of a chat corpus through the real memory engine (bench/replay.py runs it).

Each message is appended through the real log on a real PostgreSQL, with simulated time taken
from the message's date, and the compactor runs with the deterministic fake summarizer (its
size model is printed with the figures, since every calls-per-message figure depends on it).
The invariants of the row are checked after every swap.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from memory import (
    ChatKey,
    Compactor,
    ImportedMessage,
    MemoryConfig,
    MemoryEngine,
    Summarizer,
    build,
    from_import,
    make_engine,
    make_sessions,
    migrate,
    read_any,
    row_audit,
    tail_line_bytes,
)
from memory.clock import SimulatedClock
from memory.fakes.context_check import database_context_check
from memory.fakes.summarizer import FakeSummarizer, size_model_description


class ReplayHooks(Protocol):
    """What a benchmark adds to a replay (bench/turns.py): its own view of the compactor's
    calls, and a look at the chat after every message (reply turns, baselines)."""

    clock: SimulatedClock  # the replay runs on this clock

    def wrap(self, summarizer: FakeSummarizer) -> Summarizer:
        """The summarizer the compactor calls: ``summarizer`` metered (bench/turns.py), or
        another one altogether (bench/fidelity.py's real-model mode: the Anthropic one)."""
        ...

    async def started(self, memory: MemoryEngine, chat_id: int) -> None: ...

    async def message(self, index: int, record: ImportedMessage) -> None:
        """Called after message ``index`` is logged and the compactor has had its pass."""
        ...

    async def quiet(self, until: datetime) -> None:
        """The chat is as it is now until ``until``: what the bot does meanwhile (keep-warm
        pings). Called before each message, once up to the quiet swap and once after it."""
        ...


@dataclass
class ReplayResult:
    corpus: str
    messages: int = 0
    model_calls: int = 0
    summarize_calls: int = 0
    card_calls: int = 0  # people-card calls (memory/compaction/cards.py), not in model_calls
    model_tasks: int = 0
    calls_per_message: float = 0.0
    free_node_share: float = 0.0
    swaps: int = 0
    forced_swaps: int = 0
    max_row_bytes: int = 0
    max_tail_bytes: int = 0
    max_prompt_bytes: int = 0
    invariant_violations: int = 0
    # Compactor calls whose <chat> context was not a run of the lines before each task's
    # input (read from the database at call time, memory/fakes/context_check.py): 0 required.
    context_violations: int = 0
    violations: list[str] = field(default_factory=list)
    failed_calls: int = 0
    converged: bool = True
    seconds: float = 0.0
    size_model: str = ""

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["violations"] = self.violations[:20]
        return out


def author_id_of(name: str) -> int:
    """A stable id for an author a corpus knows only by name (a 48-bit hash of it, never 0)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:6], "big") + 1


async def check_row(
    memory: MemoryEngine, chat_id: int, result: ReplayResult, *, after_batch: bool = False
) -> int:
    """Check the row's invariants (memory/reading/row_audit.py) into ``result``; returns its bytes."""
    checked = await row_audit.check_row(memory.sessions, chat_id, memory.config, after_batch=after_batch)
    result.violations.extend(checked.problems)
    result.invariant_violations += len(checked.problems)
    return checked.size


async def replay(
    corpus: Path,
    *,
    database_url: str,
    limit: int | None = None,
    config: MemoryConfig | None = None,
    fail_rate: float = 0.0,
    overshoot_rate: float = 0.0,
    hooks: ReplayHooks | None = None,
    records: Iterable[ImportedMessage] | None = None,
) -> ReplayResult:
    """Replay ``corpus`` (or ``records``, when given: the corpus as a benchmark changed it,
    bench/fidelity_plant.py) through the real engine; its figures."""
    config = config or MemoryConfig()
    engine = make_engine(database_url)
    await migrate.upgrade(engine)
    sessions = make_sessions(engine)
    summarizer = FakeSummarizer(
        overshoot_rate=overshoot_rate,
        fail_rate=fail_rate,
        node_bytes=config.node_bytes,
        tries=config.tries,
        trim_slack=config.trim_slack,
        context_strict=False,
    )
    clock = hooks.clock if hooks is not None else SimulatedClock()
    wrapped = hooks.wrap(summarizer) if hooks else summarizer
    memory = build(sessions, config, wrapped, clock=clock)
    compactor = memory.compactor
    assert compactor is not None  # build makes one for a summarizer
    result = ReplayResult(
        corpus=corpus.name, size_model=size_model_description(config.node_bytes, overshoot_rate)
    )
    started = time.perf_counter()
    try:
        chat_id = await memory.ensure_chat(ChatKey(kind="imported", name=f"replay:{corpus.name}"))
        summarizer.context_check = database_context_check(sessions, chat_id)
        if hooks is not None:
            await hooks.started(memory, chat_id)
        row_bytes = tail = 0
        previous = None
        quiet = timedelta(seconds=config.quiet_seconds)
        for count, record in enumerate(read_any(corpus) if records is None else records):
            if limit is not None and count >= limit:
                break
            if hooks is not None and previous is not None:  # the gap, up to a quiet swap
                await hooks.quiet(min(record.created_at, previous + quiet))
            clock.set(record.created_at)
            # A quiet swap can only fall due in a gap of QUIET or more; skip the cheap check otherwise.
            if previous is not None and record.created_at - previous >= quiet:
                row_bytes, tail = await _run(compactor, memory, chat_id, result, row_bytes, tail)
            if hooks is not None:  # the rest of the gap, after the swap
                await hooks.quiet(record.created_at)
            # As `eva import` logs it (mentions shown as names), without the snowflake and
            # reply links the replay has never used.
            new = replace(from_import(record, None), snowflake=None, edited_at=None)
            if new.author_id is None:  # live Discord always has one; the people cards need it
                new = replace(new, author_id=author_id_of(new.author_name))
            index = await memory.append(chat_id, new)
            assert index is not None
            tail += tail_line_bytes(index, new.author_name, new.content)
            result.max_tail_bytes = max(result.max_tail_bytes, tail)
            result.max_prompt_bytes = max(result.max_prompt_bytes, row_bytes + tail)
            row_bytes, tail = await _run(compactor, memory, chat_id, result, row_bytes, tail)
            if hooks is not None:
                await hooks.message(index, record)
            previous = record.created_at
            result.messages += 1
        # The end of the corpus: let the compactor finish, as a quiet night would.
        clock.advance(config.quiet_seconds + 1)
        report = await compactor.run(chat_id, until_idle=True)
        if report.batches:
            await check_row(memory, chat_id, result, after_batch=True)
        if report.swaps:
            result.swaps += report.swaps
            await check_row(memory, chat_id, result)
        result.converged, result.free_node_share = await row_audit.settled(sessions, chat_id, config)
    finally:
        await engine.dispose()
    # Billed requests: a too-long retry is a second request in the same conversation.
    result.model_calls = summarizer.usage.calls
    result.summarize_calls = summarizer.calls
    result.card_calls = summarizer.card_calls
    result.model_tasks = summarizer.tasks
    result.failed_calls = summarizer.failed_calls
    result.context_violations = summarizer.context_violations
    result.calls_per_message = round(result.model_calls / max(result.messages, 1), 4)
    result.seconds = round(time.perf_counter() - started, 1)
    return result


async def _run(
    compactor: Compactor,
    memory: MemoryEngine,
    chat_id: int,
    result: ReplayResult,
    row_bytes: int,
    tail: int,
) -> tuple[int, int]:
    report = await compactor.run(chat_id)
    if report.batches:
        await check_row(memory, chat_id, result, after_batch=True)
    if not report.swaps:
        return row_bytes, tail
    result.swaps += report.swaps
    result.forced_swaps += report.forced_swaps
    row_bytes = await check_row(memory, chat_id, result)
    tail = await row_audit.tail_bytes(memory.sessions, chat_id)
    result.max_row_bytes = max(result.max_row_bytes, row_bytes)
    return row_bytes, tail
