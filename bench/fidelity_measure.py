"""The model-free measures of bench/fidelity.py, taken on the real engine at each probe's time.

The replay (bench/replay_loop.py) logs the planted corpus through the real log and compactor;
these hooks, after each message:

- run an erasure where the plan puts one (``MemoryEngine.erase_author_everywhere``, the
  engine's own erasure by id, as `eva forget --user` runs it);
- at a probe's time, measure it: reachability (the planted message reached from the row line
  over it by zoom, counting the zoom calls), retrieval (``MemoryEngine.recall`` with the
  question's words, bench/fidelity_search.py, and the BM25 baseline: the planted message's rank
  in the top 10), and for an erased fact whether it is found anywhere (the row and the tail the
  reply model reads, recall with the question's words or the value itself, every zoom from the
  row down to its slot): 0 required;
- at each distinct probe time, resolution: bytes of memory the reply model reads per message
  covered, for the message a day, a week, a month and a year back, in Eva's row and in the
  rolling summary of bench/baselines.py fed the same messages.

An asker (bench/fidelity_model.py) may add a real reply turn per probe.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from bench.baselines import RollingSummary
from bench.cache_model import CacheMeter, MeteredSummarizer, corpus_seconds
from bench.fidelity_plant import KINDS, Planted, Probe, contains
from bench.fidelity_search import Bm25, query_words
from bench.meters import ReplyMeter, compact_model
from memory import ImportedMessage, MemoryConfig, MemoryEngine, PromptView, Summarizer, errors
from memory.clock import SimulatedClock
from memory.fakes.summarizer import FakeSummarizer

AGES = {
    "day": timedelta(days=1),
    "week": timedelta(days=7),
    "month": timedelta(days=30),
    "year": timedelta(days=365),
}
HIT_RANKS = (1, 5, 10)
_ADDRESS = re.compile(r"^(\d+)\+(\d+) ", re.MULTILINE)
# A hit holding every word of the query, or some of them (recall ranks both, the partial
# ones below and named as such, memory/reading/reads.py); the rank is the hit's place either way.
_HIT = re.compile(r"^(?:Partial hit|Hit) \d+: message #(\d+)\b", re.MULTILINE)
# What a line shows besides the words: a row line's head (``1360+8 2004-12-01|``), a tail or
# recall line's index, time and mark (``>#4210 2004-12-01 13:45 ``), recall's "Hit 2: ..." and
# "Partial hit 3: message #k (has: ...)" lines (whose words echo the query, not the memory).
_HEADS = re.compile(
    r"^(?:\d+\+\d+ [^|]*\||[> ]?#\d+ \d{4}-\d\d-\d\d \d\d:\d\d |(?:Partial hit|Hit) \d+: message #\d+\b.*$)"
)
# The cost estimate of a real-model run: Eva's turn zooms or recalls twice, so it is three calls,
# the two later ones reading the first one's prompt from the cache at 0.1x: 1.2x its first call.
ESTIMATED_TURN_FACTOR = 1.2


class Asker(Protocol):
    """A real reply turn per probe (bench/fidelity_model.py)."""

    async def ask(self, probe: Probe, memory: MemoryEngine, chat_id: int, rolling: PromptView) -> None: ...

    async def after_message(self, index: int) -> None:
        """After each message's compactor pass: the rolling summary's rewrite, the budget."""
        ...


@dataclass
class ProbeResult:
    probe: Probe
    reachable: bool
    zoom_steps: int | None
    recall_rank: int | None
    bm25_rank: int | None
    found_by: list[str] = field(default_factory=list)  # erased only: where it was found


def covering(lines: list[str], index: int) -> tuple[int, int] | None:
    """The ``(first, count)`` of the line (``id+n ...``) whose messages include ``index``."""
    for line in lines:
        match = _ADDRESS.match(line)
        if match:
            first, count = int(match.group(1)), int(match.group(2))
            if first <= index < first + count:
                return first, count
    return None


async def zoom_path(
    memory: MemoryEngine, chat_id: int, view: PromptView, index: int
) -> tuple[int | None, list[str]]:
    """Zoom calls from the row line over ``index`` down to the message (0: in the tail the
    model already reads), and every text zoom showed on the way; None when the way breaks."""
    in_tail = index >= view.boundary
    if in_tail and (view.dropped_from is None or not view.dropped_from <= index < (view.dropped_to or 0)):
        return 0, [line for line in view.tail_lines if line.startswith(f"#{index} ")]
    if in_tail:  # left out of a tail that outgrew its cap: the model is told to search it
        return 1, [await memory.zoom(chat_id, index, 1)]
    found = covering(view.row_lines, index)
    seen: list[str] = []
    steps = 0
    while found is not None and found[1] > 1:
        text = await memory.zoom(chat_id, *found)
        seen.append(text)
        steps += 1
        found = covering(text.splitlines(), index)
    if found is None:
        return None, seen
    seen.append(await memory.zoom(chat_id, index, 1))
    return steps + 1, seen


async def recall_indexes(
    memory: MemoryEngine, chat_id: int, query: str, limit: int = 10
) -> tuple[list[int], str]:
    """The indexes ``recall`` found, best first, and the text of its hits ("" for none: its
    "No message matches ..." repeats the query, which is not a find)."""
    try:
        text = await memory.recall(chat_id, query, limit=limit)
    except errors.BadRequest:
        return [], ""
    found = [int(k) for k in _HIT.findall(text)]
    return found, text if found else ""


def words_only(text: str) -> str:
    """``text`` without the heads of its lines: an erased code "4210" must not be "found" in the
    address of a line ``4210+2`` or the index of message #4210."""
    return "\n".join(_HEADS.sub("", line) for line in text.splitlines())


def rank_of(found: list[int], index: int) -> int | None:
    return found.index(index) + 1 if index in found else None


@dataclass
class Resolution:
    """Bytes read per message covered, per age, summed over the probe times that had one."""

    row: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    rolling: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def figures(self) -> dict[str, dict[str, float | int | None]]:
        out: dict[str, dict[str, float | int | None]] = {}
        for age in AGES:
            row, rolling = self.row.get(age, []), self.rolling.get(age, [])
            out[age] = {
                "samples": len(row),
                "row_bytes_per_message": round(sum(row) / len(row), 2) if row else None,
                "rolling_bytes_per_message": round(sum(rolling) / len(rolling), 2) if rolling else None,
            }
        return out


def _line_bytes(line: str) -> int:
    return len(line.encode()) + 1


def row_bytes_per_message(view: PromptView, index: int) -> float:
    """What the reply model reads of message ``index``: its tail line, or its row line's bytes
    shared by the messages the line covers; 0 when it is in neither (left out of the tail)."""
    if index >= view.boundary:
        return next((_line_bytes(line) for line in view.tail_lines if line.startswith(f"#{index} ")), 0.0)
    for line in view.row_lines:
        match = _ADDRESS.match(line)
        if match and int(match.group(1)) <= index < int(match.group(1)) + int(match.group(2)):
            return _line_bytes(line) / int(match.group(2))
    return 0.0


def rolling_bytes_per_message(rolling: RollingSummary, index: int) -> float:
    """The same for the rolling summary: its tail line, or the summary shared by every message
    before the tail."""
    if rolling.tail and index >= rolling.tail[0][0]:
        return float(next((size for k, _, size in rolling.tail if k == index), 0))
    folded = rolling.tail[0][0] if rolling.tail else index + 1
    return sum(_line_bytes(line) for line in rolling.summary) / max(folded, 1)


class FidelityHooks:
    """The replay hooks of bench/fidelity.py (bench/replay_loop.py ReplayHooks)."""

    def __init__(
        self,
        planted: Planted,
        config: MemoryConfig,
        *,
        asker: Asker | None = None,
        summarizer: Summarizer | None = None,
        rolling: RollingSummary | None = None,
        clock: SimulatedClock | None = None,
    ) -> None:
        self.clock = clock or SimulatedClock()
        self.planted, self.asker, self.real_summarizer = planted, asker, summarizer
        self.rolling = rolling or RollingSummary(config, self.clock)
        self.bm25 = Bm25()
        self.due: dict[int, list[Probe]] = defaultdict(list)
        for probe in planted.probes:
            self.due[probe.ask_after].append(probe)
        self.results: list[ProbeResult] = []
        self.resolution = Resolution()
        self.times: list[datetime] = []
        self.memory: MemoryEngine | None = None
        self.chat_id = 0
        self.mismatched = 0  # a planted message logged at another index than planned: 0 required
        # The estimate of a real-model run: compaction at COMPACT_MODEL, the probes' turns.
        self.compact_meter = CacheMeter(compact_model(), corpus_seconds(self.clock))
        self.turn_meter = ReplyMeter(self.clock)

    def wrap(self, summarizer: FakeSummarizer) -> Summarizer:
        if self.real_summarizer is not None:  # the real-model mode builds the tree with the model
            return self.real_summarizer
        return MeteredSummarizer(summarizer, [self.compact_meter])

    async def started(self, memory: MemoryEngine, chat_id: int) -> None:
        self.memory, self.chat_id = memory, chat_id

    async def quiet(self, until: datetime) -> None:
        """Nothing between messages: the probes' turns are priced at 5-minute marks, no pings."""

    async def message(self, index: int, record: ImportedMessage) -> None:
        assert self.memory is not None
        if index in self.planted.planted_indexes and self.planted.records[index] is not record:
            self.mismatched += 1
        self.times.append(record.created_at)
        self.bm25.add(index, record.author_name, record.content)
        self.rolling.message(index, record)
        if self.asker is not None:
            await self.asker.after_message(index)
        for author_id, name in self.planted.erasures.get(index, []):
            await self.memory.erase_author_everywhere(author_id)
            self.bm25.remove_author(name)
        probes = self.due.get(index, [])
        if not probes:
            return
        view = await self.memory.prompt_view(self.chat_id)
        self._resolution(view, index)
        for probe in probes:
            self.results.append(await self.measure(probe, view))
            self.turn_meter.account(view, index, record)
            self.rolling.reply(index, record)
            if self.asker is not None:
                await self.asker.ask(probe, self.memory, self.chat_id, self.rolling.view(index + 1))

    def _resolution(self, view: PromptView, index: int) -> None:
        now = self.times[index]
        for age, delta in AGES.items():
            target = now - delta
            if target < self.times[0]:
                continue
            at = max(0, bisect.bisect_right(self.times, target) - 1)
            self.resolution.row[age].append(row_bytes_per_message(view, at))
            self.resolution.rolling[age].append(rolling_bytes_per_message(self.rolling, at))

    async def measure(self, probe: Probe, view: PromptView) -> ProbeResult:
        assert self.memory is not None
        memory, chat = self.memory, self.chat_id
        value = probe.value
        fact = self.planted.records[probe.planted].content  # what the planted message says
        steps, seen = await zoom_path(memory, chat, view, probe.planted)
        reachable = steps is not None and bool(seen) and contains(seen[-1], fact)
        words = query_words(probe.question)
        found, recalled = await recall_indexes(memory, chat, " ".join(words))
        result = ProbeResult(
            probe,
            reachable,
            steps if reachable else None,
            rank_of(found, probe.planted),
            rank_of(self.bm25.rank(words), probe.planted),
        )
        if probe.kind == "erased":
            _, by_value = await recall_indexes(memory, chat, probe.expected, limit=20)
            slot = await memory.zoom(chat, probe.planted, 1)
            where = {
                "row": contains(words_only(view.render()), value),
                "recall": contains(words_only(recalled), value) or contains(words_only(by_value), value),
                "zoom": any(contains(words_only(text), value) for text in [*seen, slot]),
            }
            result.found_by = [name for name, hit in where.items() if hit]
        return result


def kind_figures(results: list[ProbeResult]) -> dict[str, dict[str, Any]]:
    """Per kind: reachability share, mean zoom steps, recall and BM25 hit@1/5/10, erased found."""
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        mine = [r for r in results if r.probe.kind == kind]
        if not mine:
            continue
        steps = [r.zoom_steps for r in mine if r.zoom_steps is not None]
        figures: dict[str, Any] = {
            "probes": len(mine),
            "reachable_share": round(sum(r.reachable for r in mine) / len(mine), 4),
            "mean_zoom_steps": round(sum(steps) / len(steps), 2) if steps else None,
        }
        for name, ranks in (("recall", [r.recall_rank for r in mine]), ("bm25", [r.bm25_rank for r in mine])):
            for k in HIT_RANKS:
                figures[f"{name}_hit_at_{k}"] = round(
                    sum(1 for x in ranks if x is not None and x <= k) / len(mine), 4
                )
        if kind == "erased":
            figures["erased_found"] = sum(1 for r in mine if r.found_by)
            figures["erased_found_by"] = sorted({where for r in mine for where in r.found_by})
        out[kind] = figures
    return out
