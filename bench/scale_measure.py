"""One chat with a million messages: how fast the reads, the ingest and an erasure are.

How the chat is built (in a few minutes instead of a month of compactor calls):

1. Messages: a corpus repeated with fresh snowflakes and dates (each repetition moved past the
   previous one), logged through ``MemoryEngine.append_many`` in batches of 10,000 (one
   transaction each). One person ("forget-me-person") is given every k-th message so that
   exactly ``erase`` messages are theirs.
2. The tree and the row: a pure simulation of the compactor on those messages. Every time the
   raw tail passes TAIL_START, the tail except its newest TAIL_KEEP becomes level-0 lines, and
   a row past VIEW_HIGH is merged down to VIEW_LOW with the engine's own batch planner
   (``memory.tree.row.plan_batch``, the due rule); the staged row is swapped in at once. Lines are
   the fake summarizer's (``fake_compress_line`` / ``fake_merge_line``, the documented size
   model) or free (a message or two lines that fit in 512 bytes kept verbatim), exactly as
   the compactor writes them. Every node the simulation built (all leaves, every parent a
   batch used) is written with COPY, and the row is stored as the compactor would leave it.
3. ``VACUUM ANALYZE``, as autovacuum would have done on a chat that grew over months.

Then p50/p95 over ``samples`` calls each of: the reply prompt (``MemoryEngine.prompt_view``
plus bot/core/turn.py ``build_request``), ``zoom`` of random row lines and of random deep
addresses, ``recall`` of words sampled from the corpus without and with an author filter;
the ingest rate through ``MemoryEngine.append`` (one message per transaction) and through the
bot's own path (measured by bench/scale_ingest.py, handed in by the entry point, so that this
module loads without Discord); the time of ``MemoryEngine.erase_author`` for the person with
``erase`` messages; the database size. ``python -m bench.scale`` runs it alone.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.meters import REPLY_MAX_TOKENS, REPLY_MODEL, reply_system_prompt
from bench.scale_tree import ERASED_PERSON, TreeSimulation, generate
from bot.core.tools import TOOLS
from bot.core.turn import Trigger, TurnNote, build_request
from memory import (
    BulkDatabase,
    ChatKey,
    ImportedMessage,
    MemoryEngine,
    NewMessage,
    create_run_database,
    drop_database,
    read_any,
)
from memory.config import MemoryConfig
from memory.text.records import message_text
from memory.tree.node import Node, end, start

GUILD_ID = 7
LOAD_BATCH = 10_000
TABLES = ("messages", "nodes", "memory_rows", "chats", "usage_ledger", "opt_outs")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{3,}")
# The ingest through the bot (bench/scale_ingest.py ingest_through_bot): messages per second and
# the mean messages per batch, for texts sent to the big chat.
BotIngest = Callable[[BulkDatabase, int, Sequence[str]], Awaitable[tuple[float, float]]]


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


async def build_chat(
    spec: ScaleSpec, database: BulkDatabase, memory: MemoryEngine, figures: ScaleFigures
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
    await database.copy_nodes(sim.node_records(chat_id))
    await database.store_row(chat_id, sim.row, sim.boundary)
    figures.tree_seconds = round(time.perf_counter() - started, 1)
    figures.nodes, figures.model_nodes = len(sim.lines), len(sim.by_model)
    figures.row_lines, figures.boundary = len(sim.row), sim.boundary
    figures.row_bytes = sum(sim.size(p) for p in sim.row)
    await database.vacuum_analyze()
    return chat_id, sim, records


def _queries(rng: random.Random, texts: Sequence[str], n: int, fewest: int, most: int) -> list[str]:
    """``n`` recall queries of ``fewest``-``most`` words as people type them: words of one
    message of the corpus, topped up from another when it has too few (so some queries hold
    words no single message has, as a question's paraphrase does)."""
    queries: list[str] = []
    while len(queries) < n:
        size = rng.randint(fewest, most)
        words: list[str] = []
        for _ in range(8):
            text = texts[rng.randrange(len(texts))]
            found = [w for w in dict.fromkeys(_WORD.findall(text)) if w not in words]
            words += rng.sample(found, min(len(found), size - len(words)))
            if len(words) >= size:
                break
        if len(words) >= fewest:
            queries.append(" ".join(words))
    return queries


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
    rng = random.Random(spec.seed)
    system = reply_system_prompt()
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
    words = _queries(rng, sim.texts, n, 1, 1)
    queries = _queries(rng, sim.texts, n, 3, 6)
    authors = [sim.authors[rng.randrange(len(sim.authors))] for _ in range(n)]
    out["recall"] = await _timed(queries, lambda q: memory.recall(chat_id, q))
    out["recall_word"] = await _timed(words, lambda w: memory.recall(chat_id, w))
    if small_texts:
        small_queries = _queries(rng, small_texts, n, 3, 6)
        out["recall_small"] = await _timed(small_queries, lambda q: memory.recall(small_chat_id, q))
    out["recall_author"] = await _timed(
        list(zip(queries, authors, strict=True)), lambda qa: memory.recall(chat_id, qa[0], author=qa[1])
    )
    return out


async def _ingest(memory: MemoryEngine, chat_id: int, messages: Sequence[NewMessage]) -> float:
    started = time.perf_counter()
    for msg in messages:
        await memory.append(chat_id, msg)
    return round(len(messages) / (time.perf_counter() - started), 1)


async def measure_writes(
    spec: ScaleSpec,
    database_url: str,
    database: BulkDatabase,
    memory: MemoryEngine,
    chat_id: int,
    records: list[ImportedMessage],
    figures: ScaleFigures,
    ingest_through_bot: BotIngest,
) -> None:
    fresh = list(generate(records, 3 * spec.ingest, 0, first=spec.messages))
    figures.ingest_messages = spec.ingest
    figures.append_per_second = await _ingest(memory, chat_id, fresh[: spec.ingest])
    texts = [m.content for m in fresh[2 * spec.ingest :]]
    figures.ingest_per_second, figures.ingest_batch_mean = await ingest_through_bot(database, chat_id, texts)
    # What-if: the same path with the commit's WAL flush made asynchronous (not the default).
    relaxed = BulkDatabase.without_commit_flush(database_url)
    try:
        relaxed_memory = MemoryEngine(relaxed.sessions, spec.config)
        figures.ingest_async_per_second = await _ingest(
            relaxed_memory, chat_id, fresh[spec.ingest : 2 * spec.ingest]
        )
        figures.commit_ms = await relaxed.commit_ms("on")
        figures.commit_async_ms = await relaxed.commit_ms("off")
    finally:
        await relaxed.close()
    started = time.perf_counter()
    report = await memory.erase_author(GUILD_ID, ERASED_PERSON[1])
    figures.erase_seconds = round(time.perf_counter() - started, 2)
    figures.erase_messages, figures.erase_nodes = report.messages, report.nodes


async def measure_size(database: BulkDatabase, figures: ScaleFigures) -> None:
    figures.database_bytes, figures.table_bytes, figures.postgres_version = await database.sizes(TABLES)


async def measure_scale(spec: ScaleSpec, database_url: str, ingest_through_bot: BotIngest) -> ScaleFigures:
    database = await BulkDatabase.open(database_url)
    memory = MemoryEngine(database.sessions, spec.config)
    figures = ScaleFigures(messages=spec.messages, corpus=spec.corpus.name)
    try:
        chat_id, sim, records = await build_chat(spec, database, memory, figures)
        await measure_size(database, figures)
        figures.latencies = await measure_reads(
            spec, memory, chat_id, sim, figures.small_chat_id, figures.small_texts
        )
        await measure_writes(
            spec, database_url, database, memory, chat_id, records, figures, ingest_through_bot
        )
    finally:
        await database.close()
    return figures


async def run_scale(spec: ScaleSpec, admin_url: str, ingest_through_bot: BotIngest) -> ScaleFigures:
    """The scale run on a database of its own, created on ``admin_url``'s server and dropped."""
    name = f"eva_scale_{int(time.time() * 1000)}"
    url = await create_run_database(admin_url, name)
    try:
        return await measure_scale(spec, url, ingest_through_bot)
    finally:
        await drop_database(admin_url, name)
