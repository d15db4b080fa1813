"""One chat with a million messages: how fast the reads, the ingest and an erasure are.

How the chat is built (in a few minutes instead of a month of compactor calls):

1. Messages: a corpus repeated with fresh snowflakes and dates (each repetition moved past the
   previous one), logged through ``memory.log.append_many`` in batches of 10,000 (one
   transaction each). One person ("forget-me-person") is given every k-th message so that
   exactly ``erase`` messages are theirs.
2. The tree and the row: a pure simulation of the compactor on those messages. Every time the
   raw tail passes TAIL_START, the tail except its newest TAIL_KEEP becomes level-0 lines, and
   a row past VIEW_HIGH is merged down to VIEW_LOW with the engine's own batch planner
   (``memory.row.plan_batch``, the due rule); the staged row is swapped in at once. Lines are
   the fake summarizer's (``fake_compress_line`` / ``fake_merge_line``, the documented size
   model) or free (a message or two lines that fit in 512 bytes kept verbatim), exactly as
   the compactor writes them. Every node the simulation built (all leaves, every parent a
   batch used) is written with COPY, and the row is stored as the compactor would leave it.
3. ``VACUUM ANALYZE``, as autovacuum would have done on a chat that grew over months.

Then p50/p95 over ``samples`` calls each of: the reply prompt (``MemoryEngine.prompt_view``
plus bot/turn.py ``build_request``), ``zoom`` of random row lines and of random deep
addresses, ``recall`` of words sampled from the corpus without and with an author filter;
the ingest rate through ``MemoryEngine.append`` (one message per transaction); the time of
``MemoryEngine.erase_author`` for the person with ``erase`` messages; the database size.
"""

from __future__ import annotations

import random
import re
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text, update
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bench.turns import REPLY_MAX_TOKENS, REPLY_MODEL
from memory import migrate
from memory.config import MemoryConfig
from memory.database import make_engine, make_sessions, normalize_url
from memory.engine import MemoryEngine
from memory.fake_size_model import fake_compress_line, fake_merge_line, node_seed
from memory.importers import ImportedMessage, message_text, read_any
from memory.log import ChatKey, NewMessage, tail_line_bytes
from memory.models import MemoryRow
from memory.render import LineInfo, row_line_bytes
from memory.row import plan_batch
from memory.tree import Node, children, end, free_leaf, free_merge, start

GUILD_ID = 7
ERASED_PERSON = ("forget-me-person", 424_242)
SNOWFLAKE_BASE = 10**15
LOAD_BATCH = 10_000
TABLES = ("messages", "nodes", "memory_rows", "chats", "usage_ledger", "opt_outs")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{3,}")


@dataclass(frozen=True)
class ScaleSpec:
    corpus: Path
    messages: int = 1_000_000
    small_chat: int = 10_000  # a second chat in the same database, for recall_small_chat
    samples: int = 200
    ingest: int = 5_000
    erase: int = 10_000
    config: MemoryConfig = field(default_factory=MemoryConfig)
    seed: int = 6


@dataclass
class Latency:
    samples: int
    p50_ms: float
    p95_ms: float
    max_ms: float


def latency(seconds: Sequence[float]) -> Latency:
    ordered = sorted(seconds)

    def pick(q: float) -> float:
        return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return Latency(len(ordered), pick(0.50), pick(0.95), round(1000 * ordered[-1], 2))


@dataclass
class ScaleFigures:
    messages: int
    corpus: str
    load_seconds: float = 0.0
    tree_seconds: float = 0.0
    nodes: int = 0
    model_nodes: int = 0
    row_lines: int = 0
    row_bytes: int = 0
    boundary: int = 0
    latencies: dict[str, Latency] = field(default_factory=dict)
    ingest_messages: int = 0
    ingest_per_second: float = 0.0  # the bot's ingest path (bench/scale_ingest.py)
    ingest_batch_mean: float = 0.0  # messages per transaction on that path
    append_per_second: float = 0.0  # MemoryEngine.append, one message per transaction
    ingest_async_per_second: float = 0.0  # what-if: that path with synchronous_commit = off
    commit_ms: float = 0.0  # one-row INSERT + COMMIT, synchronous_commit = on (the default)
    commit_async_ms: float = 0.0
    erase_messages: int = 0
    erase_nodes: int = 0
    erase_seconds: float = 0.0
    database_bytes: int = 0
    table_bytes: dict[str, int] = field(default_factory=dict)
    postgres_version: str = ""
    small_chat_id: int = 0
    small_texts: list[str] = field(default_factory=list, repr=False)

    @property
    def bytes_per_million(self) -> float:
        return self.database_bytes * 1_000_000 / max(self.messages, 1)


def generate(
    records: Sequence[ImportedMessage], count: int, erase: int, first: int = 0
) -> Iterator[NewMessage]:
    """Messages ``first .. first+count-1`` of the corpus repeated; every ``step``-th of the
    first ``erase * step`` messages belongs to the person the benchmark erases."""
    span = records[-1].created_at - records[0].created_at + timedelta(days=1)
    step = max(1, (first + count) // max(erase, 1)) if erase else 0
    for k in range(first, first + count):
        rec = records[k % len(records)]
        name, author_id = rec.author_name, zlib.crc32(rec.author_name.encode()) + 1
        if step and k % step == step - 1 and k // step < erase:
            name, author_id = ERASED_PERSON
        yield NewMessage(
            author_name=name,
            created_at=rec.created_at + span * (k // len(records)),
            content=rec.content,
            author_id=author_id,
            snowflake=SNOWFLAKE_BASE + k,
            is_bot=rec.is_bot,
        )


class TreeSimulation:
    """The compactor's arms, batches and swaps on a message stream, without a model."""

    def __init__(self, config: MemoryConfig) -> None:
        self.cfg = config
        self.authors: list[str] = []
        self.texts: list[str] = []
        self.times: list[datetime] = []
        self.line_bytes: list[int] = []
        self.lines: dict[Node, str] = {}
        self.by_model: set[Node] = set()
        self._row_bytes: dict[Node, int] = {}
        self.row: list[Node] = []
        self.boundary = 0
        self.tail = 0

    def add(self, msg: NewMessage) -> None:
        index = len(self.texts)
        body = message_text(msg.content, msg.attachments)
        self.authors.append(msg.author_name)
        self.texts.append(body)
        self.times.append(msg.created_at)
        size = tail_line_bytes(index, msg.author_name, body)
        self.line_bytes.append(size)
        self.tail += size
        if self.tail > self.cfg.tail_start:
            self._arm(index + 1)

    def line(self, node: Node) -> str:
        found = self.lines.get(node)
        if found is not None:
            return found
        if node[0] == 0:
            i = node[1]
            made = free_leaf(self.authors[i], self.texts[i], self.cfg.node_bytes)
            if made is None:
                made = fake_compress_line(
                    self.authors[i], self.texts[i], node_seed(0, i), self.cfg.node_bytes
                )
                self.by_model.add(node)
        else:
            left, right = (self.line(child) for child in children(node))
            made = free_merge(left, right, self.cfg.node_bytes)
            if made is None:
                made = fake_merge_line(left, right, node_seed(*node), self.cfg.node_bytes)
                self.by_model.add(node)
        self.lines[node] = made
        return made

    def size(self, node: Node) -> int:
        found = self._row_bytes.get(node)
        if found is None:
            info = LineInfo(node, self.line(node), self.times[start(node)], self.times[end(node) - 1])
            found = self._row_bytes[node] = row_line_bytes(info, self.cfg.timezone)
        return found

    def _arm(self, total: int) -> None:
        keep, kept = total - 1, self.line_bytes[total - 1]
        while keep > self.boundary and kept + self.line_bytes[keep - 1] <= self.cfg.tail_keep:
            keep -= 1
            kept += self.line_bytes[keep]
        if keep <= self.boundary:
            return
        staged = self.row + [(0, i) for i in range(self.boundary, keep)]
        if sum(self.size(p) for p in staged) > self.cfg.view_high:
            staged = plan_batch(staged, total, self.size, self.cfg.view_low).parts
        self.row, self.boundary = staged, keep
        self.tail = sum(self.line_bytes[keep:total])

    def node_records(self, chat_id: int) -> Iterator[tuple[Any, ...]]:
        for node, line in self.lines.items():
            model = node in self.by_model
            yield (
                chat_id,
                node[0],
                node[1],
                line,
                len(line.encode()),
                self.times[start(node)],
                self.times[end(node) - 1],
                model,
                "fake" if model else None,
                1 if model else 0,
            )


async def _copy_nodes(engine: AsyncEngine, sim: TreeSimulation, chat_id: int) -> None:
    columns = [
        "chat_id",
        "level",
        "idx",
        "text",
        "bytes",
        "first_at",
        "last_at",
        "by_model",
        "model",
        "tries",
    ]
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection
        await driver.copy_records_to_table("nodes", records=list(sim.node_records(chat_id)), columns=columns)
        await conn.commit()


async def build_chat(
    spec: ScaleSpec, engine: AsyncEngine, memory: MemoryEngine, figures: ScaleFigures
) -> tuple[int, TreeSimulation, list[ImportedMessage]]:
    records = list(read_any(spec.corpus))
    small_id = await memory.ensure_chat(ChatKey("text", "scale-small", discord_id=2, guild_id=GUILD_ID))
    small = list(generate(records, spec.small_chat, 0))
    for first in range(0, len(small), LOAD_BATCH):
        await memory.append_many(small_id, small[first : first + LOAD_BATCH])
    figures.small_chat_id = small_id
    figures.small_texts = [message_text(m.content, m.attachments) for m in small]
    chat_id = await memory.ensure_chat(ChatKey("text", "scale", discord_id=1, guild_id=GUILD_ID))
    sim = TreeSimulation(spec.config)
    started = time.perf_counter()
    batch: list[NewMessage] = []
    for msg in generate(records, spec.messages, spec.erase):
        batch.append(msg)
        if len(batch) == LOAD_BATCH:
            await memory.append_many(chat_id, batch)
            batch = []
    if batch:
        await memory.append_many(chat_id, batch)
    figures.load_seconds = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    for msg in generate(records, spec.messages, spec.erase):
        sim.add(msg)
    await _copy_nodes(engine, sim, chat_id)
    async with memory.sessions() as s, s.begin():
        await s.execute(
            update(MemoryRow)
            .where(MemoryRow.chat_id == chat_id)
            .values(shown=[[level, idx] for level, idx in sim.row], boundary=sim.boundary, version=1)
        )
    figures.tree_seconds = round(time.perf_counter() - started, 1)
    figures.nodes, figures.model_nodes = len(sim.lines), len(sim.by_model)
    figures.row_lines, figures.boundary = len(sim.row), sim.boundary
    figures.row_bytes = sum(sim.size(p) for p in sim.row)
    async with engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("VACUUM ANALYZE"))
    return chat_id, sim, records


async def _timed(samples: Sequence[Any], call: Any) -> Latency:
    seconds = []
    for sample in samples:
        started = time.perf_counter()
        await call(sample)
        seconds.append(time.perf_counter() - started)
    return latency(seconds)


async def measure_reads(
    spec: ScaleSpec,
    memory: MemoryEngine,
    chat_id: int,
    sim: TreeSimulation,
    small_chat_id: int = 0,
    small_texts: Sequence[str] = (),
) -> dict[str, Latency]:
    from bot.prompts import system_prompt
    from bot.settings import Settings
    from bot.tools import TOOLS
    from bot.turn import Trigger, TurnNote, build_request

    rng = random.Random(spec.seed)
    system = system_prompt(Settings(_env_file=None))  # type: ignore[call-arg]
    n = spec.samples

    async def prompt(_: int) -> None:
        view = await memory.prompt_view(chat_id)
        note = TurnNote(sim.times[-1], view.timezone, (Trigger("Pia", 1, view.total - 1),))
        build_request(
            model=REPLY_MODEL, max_tokens=REPLY_MAX_TOKENS, system=system, tools=TOOLS, view=view, note=note
        )

    async def zoom(node: Node) -> None:
        await memory.zoom(chat_id, start(node), 1 << node[0])

    out = {"prompt": await _timed(range(n), prompt)}
    out["zoom_row"] = await _timed([rng.choice(sim.row) for _ in range(n)], zoom)
    deep: list[Node] = []
    while len(deep) < n:
        level = rng.randrange(0, 13)
        index = rng.randrange(0, max(1, sim.boundary >> level))
        if end((level, index)) <= sim.boundary:
            deep.append((level, index))
    out["zoom_deep"] = await _timed(deep, zoom)
    words: list[str] = []
    while len(words) < n:
        found = _WORD.findall(sim.texts[rng.randrange(len(sim.texts))])
        if found:
            words.append(rng.choice(found))
    authors = [sim.authors[rng.randrange(len(sim.authors))] for _ in range(n)]
    out["recall"] = await _timed(words, lambda w: memory.recall(chat_id, w))
    small_words: list[str] = []
    while small_texts and len(small_words) < n:
        found = _WORD.findall(small_texts[rng.randrange(len(small_texts))])
        if found:
            small_words.append(rng.choice(found))
    if small_words:
        out["recall_small"] = await _timed(small_words, lambda w: memory.recall(small_chat_id, w))
    out["recall_author"] = await _timed(
        list(zip(words, authors, strict=True)), lambda wa: memory.recall(chat_id, wa[0], author=wa[1])
    )
    return out


async def _ingest(memory: MemoryEngine, chat_id: int, messages: Sequence[NewMessage]) -> float:
    started = time.perf_counter()
    for msg in messages:
        await memory.append(chat_id, msg)
    return round(len(messages) / (time.perf_counter() - started), 1)


async def _commit_ms(engine: AsyncEngine, synchronous: str, count: int = 100) -> float:
    """Milliseconds of one one-row INSERT + COMMIT (the floor of a one-message transaction)."""
    async with engine.connect() as conn:
        await conn.execute(text(f"SET synchronous_commit = {synchronous}"))
        await conn.commit()
        started = time.perf_counter()
        for k in range(count):
            await conn.execute(text("INSERT INTO opt_outs (guild_id, user_id) VALUES (-1, :k)"), {"k": k})
            await conn.commit()
        elapsed = time.perf_counter() - started
        await conn.execute(text("DELETE FROM opt_outs WHERE guild_id = -1"))
        await conn.commit()
    return round(1000 * elapsed / count, 2)


async def measure_writes(
    spec: ScaleSpec,
    database_url: str,
    engine: AsyncEngine,
    memory: MemoryEngine,
    chat_id: int,
    records: list[ImportedMessage],
    figures: ScaleFigures,
) -> None:
    from bench.scale_ingest import ingest_through_bot

    fresh = list(generate(records, 3 * spec.ingest, 0, first=spec.messages))
    figures.ingest_messages = spec.ingest
    figures.append_per_second = await _ingest(memory, chat_id, fresh[: spec.ingest])
    texts = [m.content for m in fresh[2 * spec.ingest :]]
    figures.ingest_per_second, figures.ingest_batch_mean = await ingest_through_bot(
        engine, memory.sessions, chat_id, texts
    )
    # What-if: the same path with the commit's WAL flush made asynchronous (not the default).
    relaxed = create_async_engine(
        normalize_url(database_url),
        connect_args={"server_settings": {"synchronous_commit": "off"}},
        hide_parameters=True,
    )
    try:
        relaxed_memory = MemoryEngine(make_sessions(relaxed), spec.config)
        figures.ingest_async_per_second = await _ingest(
            relaxed_memory, chat_id, fresh[spec.ingest : 2 * spec.ingest]
        )
        figures.commit_ms = await _commit_ms(relaxed, "on")
        figures.commit_async_ms = await _commit_ms(relaxed, "off")
    finally:
        await relaxed.dispose()
    started = time.perf_counter()
    report = await memory.erase_author(GUILD_ID, ERASED_PERSON[1])
    figures.erase_seconds = round(time.perf_counter() - started, 2)
    figures.erase_messages, figures.erase_nodes = report.messages, report.nodes


async def measure_size(engine: AsyncEngine, figures: ScaleFigures) -> None:
    async with engine.connect() as conn:
        figures.database_bytes = int(
            await conn.scalar(text("SELECT pg_database_size(current_database())")) or 0
        )
        for table in TABLES:
            size = await conn.scalar(
                text("SELECT pg_total_relation_size(CAST(:t AS regclass))"), {"t": table}
            )
            figures.table_bytes[table] = int(size or 0)
        figures.postgres_version = str(await conn.scalar(text("SHOW server_version")))


async def measure_scale(spec: ScaleSpec, database_url: str) -> ScaleFigures:
    engine = make_engine(database_url)
    await migrate.upgrade(engine)
    memory = MemoryEngine(make_sessions(engine), spec.config)
    figures = ScaleFigures(messages=spec.messages, corpus=spec.corpus.name)
    try:
        chat_id, sim, records = await build_chat(spec, engine, memory, figures)
        await measure_size(engine, figures)
        figures.latencies = await measure_reads(
            spec, memory, chat_id, sim, figures.small_chat_id, figures.small_texts
        )
        await measure_writes(spec, database_url, engine, memory, chat_id, records, figures)
    finally:
        await engine.dispose()
    return figures


if __name__ == "__main__":
    import sys

    from bench.scale_cli import main

    sys.exit(main())
