"""Reply turns and compactor calls in the replay, priced with the prompt-cache simulation.

At sampled messages (a fixed-seed draw of about 1 in 50, plus every message that names a
chosen person: the most active human author of the replayed stretch, standing in for the
bot's name) the reply request is built exactly as the bot builds it (bench/meters.py) from the
engine's own ``prompt_view`` and accounted on the cache simulation at the corpus's time.
Assumptions, printed with the figures: one model call per turn, about 150 output tokens, Sonnet
5.5; with ``tool_steps`` the same turns are also priced with their zoom/recall steps
(bench/tool_steps.py) on caches of their own; the bot's own replies are not added to the log
(the corpus stays the corpus). Each turn's bill is also put down to its cause
(bench/reply_causes.py). On the friend-group timeline (bench/friend_timeline.py) the corpus is
re-timed, one message in 15 is a turn, and the first 30 days only warm the caches.

Every compactor call is accounted as the requests the Anthropic summarizer would send for it
(bench/cache_model.py), once per compactor model.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench.baselines import RollingSummary
from bench.cache_model import CacheMeter, MeteredSummarizer, MeterFigures, corpus_seconds
from bench.friend_timeline import FRIENDS, retimed
from bench.friend_timeline import counted_from as friends_counted_from
from bench.join_in import JoinInMeter
from bench.meters import AUTO, COMPACT_MODELS, WITHOUT_KEEP_WARM, ReplyMeter, compact_model
from bench.replay_loop import replay
from bench.reply_causes import at_cache_read_price
from bench.tool_steps import take_steps
from memory import ImportedMessage, MemoryConfig, MemoryEngine, PromptView, Summarizer, read_any
from memory.clock import SimulatedClock
from memory.fakes.summarizer import MEASURED_OVERSHOOT_RATE, FakeSummarizer
from memory.pricing import PriceTable

BLOCKED_WHAT_IF = "claude-haiku-4-5, context in 4-line blocks (what-if)"
# What-if (memory/fakes/summarizer_requests.py level_budget): each line asked for at most
# 128 x (level + 1) bytes. Only the output is cut; the tree is the one the fake built at today's
# sizes, so later inputs and contexts are as large as today's: this understates what a budget
# would save.
BUDGET_WHAT_IF = "claude-haiku-4-5, byte budget growing with the level (what-if)"
SAMPLE_EVERY = 50
IRC = "irc"  # the corpus's own dates
FRIENDS_TIMELINE = "friends"
HAIKU_5_5 = "claude-haiku-5-5"
SAMPLE_SEED = "eva-bench-1"


def _draw(seed: str, index: int) -> float:
    digest = hashlib.sha256(f"{seed}|{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def chosen_person(records: Iterable[ImportedMessage]) -> str | None:
    """The most active human author (ties: the first seen): people name them the way they
    would name the bot."""
    counts: Counter[str] = Counter(r.author_name for r in records if not r.is_bot and len(r.author_name) >= 3)
    return counts.most_common(1)[0][0] if counts else None


class ReplySampler:
    """Which messages get a reply turn: a fixed-seed 1-in-``every`` draw per index, plus
    every message that names ``person`` as a word (case-insensitive)."""

    def __init__(self, person: str | None, every: int = SAMPLE_EVERY, seed: str = SAMPLE_SEED) -> None:
        self.person, self.rate, self.seed = person, 1 / every, seed
        self._name = (
            re.compile(r"(?<![\w])" + re.escape(person) + r"(?![\w])", re.IGNORECASE) if person else None
        )

    def wants(self, index: int, record: ImportedMessage) -> bool:
        if _draw(self.seed, index) < self.rate:
            return True
        return bool(self._name and self._name.search(record.content))


@dataclass(frozen=True)
class RunSpec:
    """One replay of one corpus, with what to measure on it."""

    corpus: Path
    label: str
    limit: int | None = None
    config: MemoryConfig = field(default_factory=MemoryConfig)
    ttls: tuple[str, ...] = ("5m",)
    rolling: bool = False  # also run the rolling-summary baseline on the same messages
    overshoot_rate: float = MEASURED_OVERSHOOT_RATE
    sample_every: int = SAMPLE_EVERY
    rolling_summary_bytes: int = 16_000
    turns: bool = True  # reply turns at the sampled messages (bench.replay without --turns: none)
    fail_rate: float = 0.0
    # "irc": the corpus's own dates; "friends": re-timed as a friend group talks
    # (bench/friend_timeline.py), one message in 15 a reply turn, the warm-up not counted.
    timeline: str = IRC
    tool_steps: bool = False  # also price the turns with their tool steps (bench/tool_steps.py)


@dataclass
class RunFigures:
    label: str
    corpus: str
    messages: int
    person: str | None
    replay: dict[str, Any]
    compaction: dict[str, MeterFigures]
    replies: dict[str, MeterFigures]
    turns: int
    largest_prompt_bytes: int
    rolling: dict[str, Any] | None = None
    seconds: float = 0.0
    join_in: JoinInMeter | None = None
    cards: dict[str, MeterFigures] = field(default_factory=dict)  # the people cards' calls, by model
    replies_without_cards: dict[str, MeterFigures] = field(default_factory=dict)
    timeline: str = "irc"
    reply_causes: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # by ttl, cause
    replies_with_tools: dict[str, MeterFigures] = field(default_factory=dict)
    replies_haiku_5_5: dict[str, MeterFigures] = field(default_factory=dict)  # friends timeline only
    reply_pings: int = 0  # counted keep-warm pings of the auto policy (bot/core/keep_warm.py)


class TurnHooks:
    """The replay hooks: compactor calls metered, reply turns (and the baseline) at samples."""

    def __init__(self, spec: RunSpec, person: str | None, counted_from: datetime | None = None) -> None:
        self.clock = SimulatedClock()
        self.spec = spec
        friends = spec.timeline == FRIENDS_TIMELINE
        # A friend group's turns: one message in 15, whoever it names (the timeline's model).
        self.sampler = (
            ReplySampler(None, FRIENDS.reply_every) if friends else ReplySampler(person, spec.sample_every)
        )
        self.counted_from = counted_from  # turns before it warm the caches, uncounted
        self.compact_meters = {
            model: CacheMeter(model, corpus_seconds(self.clock)) for model in COMPACT_MODELS
        }
        self.compact_meters[BLOCKED_WHAT_IF] = CacheMeter(
            COMPACT_MODELS[0], corpus_seconds(self.clock), blocked_context=True
        )
        self.compact_meters[BUDGET_WHAT_IF] = CacheMeter(
            COMPACT_MODELS[0], corpus_seconds(self.clock), byte_budget=True
        )
        # The people cards' calls, per compactor model (memory/compaction/cards.py).
        self.card_meters = {model: CacheMeter(model, corpus_seconds(self.clock)) for model in COMPACT_MODELS}
        self.replies = ReplyMeter(self.clock, spec.ttls, with_tools=spec.tool_steps)
        # What a host pays with Haiku 5.5 for replies (/settings model), for the month's figure.
        self.replies_haiku = ReplyMeter(self.clock, spec.ttls, model=HAIKU_5_5) if friends else None
        # The same turns without the people cards: today's prompt, on the same timeline.
        self.replies_without_cards = ReplyMeter(self.clock, spec.ttls)
        self.rolling = (
            RollingSummary(spec.config, self.clock, summary_bytes=spec.rolling_summary_bytes, ttls=spec.ttls)
            if spec.rolling
            else None
        )
        self.memory: MemoryEngine | None = None
        self.chat_id = 0
        # Every message as one of a join-in channel (bench/join_in.py states the model).
        self.join_in = JoinInMeter(compact_model(), corpus_seconds(self.clock)) if spec.turns else None

    def wrap(self, summarizer: FakeSummarizer) -> Summarizer:
        return MeteredSummarizer(
            summarizer, list(self.compact_meters.values()), list(self.card_meters.values())
        )

    async def started(self, memory: MemoryEngine, chat_id: int) -> None:
        self.memory, self.chat_id = memory, chat_id

    async def quiet(self, until: datetime) -> None:
        """The keep-warm pings due before ``until``, each priced with the memory as it is then
        (Eva's ``prompt_view``, the rolling summary's own view)."""
        assert self.memory is not None
        memory, chat_id = self.memory, self.chat_id
        meters = [self.replies, self.replies_without_cards]
        meters += [self.replies_haiku] if self.replies_haiku is not None else []
        view: PromptView | None = None
        for meter in meters:
            for at in meter.pings_due(until):
                view = view or await memory.prompt_view(chat_id)
                cards = meter is not self.replies_without_cards
                meter.ping(view if cards else replace(view, people_lines=[]), at)
        if self.rolling is not None:
            for at in self.rolling.replies.pings_due(until):
                self.rolling.replies.ping(self.rolling.current_view(), at)

    async def message(self, index: int, record: ImportedMessage) -> None:
        if self.rolling is not None:
            self.rolling.message(index, record)
        assert self.memory is not None
        if self.join_in is not None and self.join_in.wants(record):
            self.join_in.account(index, record, await self.memory.prompt_view(self.chat_id))
        if not self.spec.turns or not self.sampler.wants(index, record):
            return
        view = await self.memory.prompt_view(self.chat_id)
        counted = self.counted_from is None or record.created_at >= self.counted_from
        steps = []
        if self.spec.tool_steps and counted:
            steps = await take_steps(self.memory, self.chat_id, index, record)
        self.replies.account(view, index, record, counted=counted, tool_results=steps)
        self.replies_without_cards.account(replace(view, people_lines=[]), index, record, counted=counted)
        if self.replies_haiku is not None:
            self.replies_haiku.account(view, index, record, counted=counted)
        if self.rolling is not None:
            self.rolling.reply(index, record, counted=counted)


def corpus_person(corpus: Path, limit: int | None) -> str | None:
    return chosen_person(itertools.islice(read_any(corpus), limit))


async def measure_run(spec: RunSpec, database_url: str) -> RunFigures:
    """Replay ``spec.corpus`` with reply turns and metered compaction; the figures."""
    started = time.perf_counter()
    person = corpus_person(spec.corpus, spec.limit)
    records, counted_from = None, None
    if spec.timeline == FRIENDS_TIMELINE:
        records = retimed(list(itertools.islice(read_any(spec.corpus), spec.limit)))
        counted_from = friends_counted_from(len(records))
    hooks = TurnHooks(spec, person, counted_from)
    result = await replay(
        spec.corpus,
        database_url=database_url,
        limit=spec.limit,
        config=spec.config,
        overshoot_rate=spec.overshoot_rate,
        fail_rate=spec.fail_rate,
        hooks=hooks,
        records=records,
    )
    return RunFigures(
        label=spec.label,
        corpus=spec.corpus.name,
        messages=result.messages,
        person=person,
        replay=result.as_json(),
        compaction={label: m.totals for label, m in hooks.compact_meters.items()},
        replies=hooks.replies.figures(),
        turns=hooks.replies.turns,
        cards={model: m.totals for model, m in hooks.card_meters.items()},
        replies_without_cards=hooks.replies_without_cards.figures(),
        largest_prompt_bytes=hooks.replies.largest_prompt_bytes,
        rolling=hooks.rolling.figures() if hooks.rolling is not None else None,
        seconds=round(time.perf_counter() - started, 1),
        join_in=hooks.join_in,
        timeline=spec.timeline,
        reply_causes=hooks.replies.cause_figures(),
        replies_with_tools=hooks.replies.tool_figures(),
        replies_haiku_5_5=hooks.replies_haiku.figures() if hooks.replies_haiku is not None else {},
        reply_pings=hooks.replies.pings,
    )


HAIKU_4_5 = "claude-haiku-4-5"


def _per_1k(cost: float, messages: int) -> float:
    return round(cost / max(messages, 1) * 1000, 4)


def headline(run: RunFigures, compact_model: str, reply_policy: str = AUTO) -> dict[str, Any]:
    """The figures bench.replay adds to its JSON (and the report shows): compaction at the
    configured model and at Haiku 4.5; with reply turns, the reply and rolling-summary cost per
    turn under the same cache policy."""
    compact = run.compaction[compact_model]
    out: dict[str, Any] = {
        "context_violations": run.replay["context_violations"],
        "compact_model": compact_model,
        "compaction_cache_read_share": round(compact.read_share, 4),
        "usd_per_1k_messages": _per_1k(compact.cost_usd, run.messages),
        "usd_per_1k_messages_haiku_4_5": _per_1k(run.compaction[HAIKU_4_5].cost_usd, run.messages),
        "what_if_byte_budget_usd_per_1k_messages_haiku_4_5": _per_1k(
            run.compaction[BUDGET_WHAT_IF].cost_usd, run.messages
        ),
    }
    if compact_model in run.cards:  # the people cards, beside the compaction they follow
        cards = run.cards[compact_model]
        out["cards_calls_per_1k_messages"] = _per_1k(cards.requests, run.messages)
        out["cards_usd_per_1k_messages"] = _per_1k(cards.cost_usd, run.messages)
        out["cards_usd_per_1k_messages_haiku_4_5"] = _per_1k(run.cards[HAIKU_4_5].cost_usd, run.messages)
        out["compaction_and_cards_usd_per_1k_messages"] = _per_1k(
            compact.cost_usd + cards.cost_usd, run.messages
        )
    if run.turns and reply_policy in run.replies:
        reply = run.replies[reply_policy]
        out["reply_policy"] = reply_policy
        out["reply_turns"] = run.turns
        out["reply_usd_per_turn"] = round(reply.cost_usd / run.turns, 5)
        out["reply_cache_read_share"] = round(reply.read_share, 4)
        if reply_policy in run.replies_without_cards:  # today's prompt on the same timeline
            before = run.replies_without_cards[reply_policy]
            out["reply_usd_per_turn_without_cards"] = round(before.cost_usd / run.turns, 5)
            out["reply_cache_read_share_without_cards"] = round(before.read_share, 4)
        if run.rolling is not None:
            rolling = run.rolling["replies_by_ttl"][reply_policy]
            out["rolling_summary_usd_per_turn"] = round(rolling.cost_usd / max(run.rolling["turns"], 1), 5)
            out["rolling_summary_cache_read_share"] = round(rolling.read_share, 4)
        if run.join_in is not None:
            out.update(run.join_in.figures(reply.cost_usd / run.turns))
        out.update(reply_cost_figures(run, reply_policy, compact.cost_usd + cards_cost(run, compact_model)))
    return out


def cards_cost(run: RunFigures, model: str) -> float:
    return run.cards[model].cost_usd if model in run.cards else 0.0


def _per_turn(figures: MeterFigures, turns: int) -> float:
    return round(figures.cost_usd / max(turns, 1), 5)


def reply_cost_figures(run: RunFigures, policy: str, compaction_usd: float) -> dict[str, Any]:
    """Where the reply money goes (bench/reply_causes.py), the turns with their tool steps, the
    figures at the other documented cache-read price and, on the friend-group timeline, what a
    month of a server costs."""
    reply = run.replies[policy]
    price = PriceTable().lookup(reply.model)
    assert price is not None
    out: dict[str, Any] = {"timeline": run.timeline}
    # Figures kept with `bench.report --save` before these fields existed have none of them.
    causes = getattr(run, "reply_causes", {})
    with_tools: dict[str, MeterFigures] = getattr(run, "replies_with_tools", {})
    haiku: dict[str, MeterFigures] = getattr(run, "replies_haiku_5_5", {})
    if policy in causes:
        out["reply_usd_by_cause"] = causes[policy]
    if policy in with_tools:
        out["reply_usd_per_turn_with_tools"] = _per_turn(with_tools[policy], run.turns)
        out["reply_tool_steps"] = TOOL_STEPS
    if policy == AUTO and WITHOUT_KEEP_WARM in run.replies:  # before/after: the policy without pings
        out["keep_warm_pings_per_turn"] = round(getattr(run, "reply_pings", 0) / max(run.turns, 1), 2)
        out["reply_usd_per_turn_without_keep_warm"] = _per_turn(run.replies[WITHOUT_KEEP_WARM], run.turns)
    other = OTHER_CACHE_READ_PRICE
    key = f"if_cache_read_{str(other).replace('.', '_')}"
    out[f"reply_usd_per_turn_{key}"] = round(
        at_cache_read_price(reply.cost_usd, reply.cache_read_tokens, price, other) / max(run.turns, 1), 5
    )
    if run.rolling is not None:
        rolling = run.rolling["replies_by_ttl"][policy]
        out["rolling_summary_usd_by_cause"] = run.rolling.get("causes_by_ttl", {}).get(policy, {})
        before = run.rolling["replies_by_ttl"].get(WITHOUT_KEEP_WARM) if policy == AUTO else None
        if before is not None:
            out["rolling_summary_usd_per_turn_without_keep_warm"] = _per_turn(before, run.rolling["turns"])
        out[f"rolling_summary_usd_per_turn_{key}"] = round(
            at_cache_read_price(rolling.cost_usd, rolling.cache_read_tokens, price, other)
            / max(run.rolling["turns"], 1),
            5,
        )
    if run.timeline == FRIENDS_TIMELINE:
        out["friend_timeline"] = FRIENDS.describe()
        compaction_per_message = compaction_usd / max(run.messages, 1)
        out["month_assumption"] = MONTH_ASSUMPTION
        out["month_usd"] = month_usd(compaction_per_message, reply.cost_usd / max(run.turns, 1))
        if policy in haiku:
            haiku_per_turn = haiku[policy].cost_usd / max(run.turns, 1)
            out["reply_usd_per_turn_haiku_5_5"] = round(haiku_per_turn, 5)
            out["month_usd_haiku_5_5_replies"] = month_usd(compaction_per_message, haiku_per_turn)
    return out


# A typical friend-group server (the friend timeline's three channels): the month's figure.
MONTH_DAYS, MONTH_MESSAGES_A_DAY, MONTH_REPLIES_A_DAY = 30, 300, 20
MONTH_ASSUMPTION = (
    f"{MONTH_MESSAGES_A_DAY} messages and {MONTH_REPLIES_A_DAY} replies a day for {MONTH_DAYS} days, "
    "compaction and people cards at the default compactor model"
)
TOOL_STEPS = "20% of turns one zoom/recall step, 5% two (bench/tool_steps.py)"
# Sonnet 5.5's cache reads: $0.10 per million in memory/pricing.py, $0.20 on some of the
# provider's own pages (memory/pricing.py says which): every reply figure is given at both.
OTHER_CACHE_READ_PRICE = Decimal("0.20")


def month_usd(compaction_per_message: float, reply_per_turn: float) -> float:
    per_day = MONTH_MESSAGES_A_DAY * compaction_per_message + MONTH_REPLIES_A_DAY * reply_per_turn
    return round(MONTH_DAYS * per_day, 2)
