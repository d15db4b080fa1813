"""Model requests accounted in process: the prompt-cache simulation on the corpus's own clock.

The benchmarks never call a model. Each request the bot would send (a reply turn, a compactor
call, a rolling-summary rewrite) is built as the real request body and passed through
:class:`memory.fakes.prompt_cache.PromptCache`, the same simulation the fake Anthropic API
uses (prefix order tools -> system -> messages, at most 4 marks, 20-block lookback, 5 min /
1 h lifetimes, per-model minimum cacheable length, ~4 bytes per token). Its clock is the
replay's simulated clock, so the lifetimes are 5 minutes and 1 hour of *corpus* time.
Costs come from :class:`memory.pricing.PriceTable` (list prices, Haiku 5.5's >100K tier).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from memory import CardBatch, CardTask, CompactTask, StillCurrent, SummaryBatch
from memory.clock import SimulatedClock
from memory.fakes.prompt_cache import Block, PromptCache, blocks_of_request
from memory.fakes.summarizer import FakeSummarizer
from memory.fakes.summarizer_requests import cards_request, compaction_requests
from memory.pricing import PriceTable, Usage


@dataclass(frozen=True, slots=True)
class _CorpusSeconds:
    clock: SimulatedClock

    def __call__(self) -> float:
        return self.clock.now().timestamp()


def corpus_seconds(clock: SimulatedClock) -> Callable[[], float]:
    """The cache's clock: seconds of simulated (corpus) time. An object, not a lambda: a meter
    travels in a run's figures from the report's worker processes (pickled) and to --save."""
    return _CorpusSeconds(clock)


@dataclass(slots=True)
class MeterFigures:
    """What a stream of requests to one model cost: the API's four counters, summed."""

    model: str
    requests: int = 0
    input_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    max_prompt_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        writes = self.cache_write_5m_tokens + self.cache_write_1h_tokens
        return self.input_tokens + writes + self.cache_read_tokens

    @property
    def read_share(self) -> float:
        """Share of the prompt tokens read from the cache (the spec's "read from cache")."""
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


class CacheMeter:
    """One model's prompt cache plus the running totals of every request accounted on it."""

    def __init__(
        self,
        model: str,
        clock: Callable[[], float],
        prices: PriceTable | None = None,
        *,
        blocked_context: bool = False,
        byte_budget: bool = False,
    ) -> None:
        self.model = model
        self.byte_budget = byte_budget  # what-if: lines asked only as long as their level needs
        self.cache = PromptCache(clock)
        self.prices = prices or PriceTable()
        self.totals = MeterFigures(model)
        # What-if for compactor calls: the <chat> context in 4-line blocks (see context_blocks).
        self.blocked_context = blocked_context
        price = self.prices.lookup(model)
        # Haiku 5.5 counts ~30% more tokens for the same text: every count (and so the cache
        # minimum, the tier threshold and the bill) is scaled, as the API would report them.
        self.token_factor = price.tokenizer_factor if price is not None else 1.0
        self._cost = Decimal(0)

    def _scaled(self, tokens: int) -> int:
        return tokens if self.token_factor == 1.0 else math.ceil(tokens * self.token_factor)

    def account(self, body: Mapping[str, Any], output_tokens: int, *, count: bool = True) -> Usage:
        """Send ``body`` through the cache; its usage, added to the totals when ``count`` (a
        warm-up turn goes through the cache, which it warms, but is not billed in the figures)."""
        blocks = [Block(b.digest, self._scaled(b.tokens), b.ttl) for b in blocks_of_request(body)]
        output_tokens = self._scaled(output_tokens)
        cached = self.cache.process(self.model, blocks)
        usage = Usage(
            input_tokens=cached.input_tokens,
            output_tokens=output_tokens,
            cache_write_5m_tokens=cached.ephemeral_5m_input_tokens,
            cache_write_1h_tokens=cached.ephemeral_1h_input_tokens,
            cache_read_tokens=cached.cache_read_input_tokens,
        )
        if not count:
            return usage
        self._cost += self.prices.cost(self.model, usage)
        t = self.totals
        t.requests += 1
        t.input_tokens += usage.input_tokens
        t.cache_write_5m_tokens += usage.cache_write_5m_tokens
        t.cache_write_1h_tokens += usage.cache_write_1h_tokens
        t.cache_read_tokens += usage.cache_read_tokens
        t.output_tokens += output_tokens
        t.max_prompt_tokens = max(t.max_prompt_tokens, usage.prompt_tokens)
        t.cost_usd = float(self._cost)
        return usage


def with_ttl(body: Mapping[str, Any], ttl: str) -> dict[str, Any]:
    """A copy of ``body`` whose every cache mark has lifetime ``ttl`` ("5m" is the default
    and leaves the marks as the bot sends them)."""
    mark = {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}

    def remark(block: Any) -> Any:
        if isinstance(block, dict) and "cache_control" in block:
            return {**block, "cache_control": dict(mark)}
        return block

    copy = dict(body)
    copy["tools"] = [remark(t) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, list):
        copy["system"] = [remark(b) for b in system]
    copy["messages"] = [
        {
            **m,
            "content": [remark(b) for b in m["content"]] if isinstance(m["content"], list) else m["content"],
        }
        for m in body.get("messages") or []
    ]
    return copy


# --- compactor calls -----------------------------------------------------------------------


class MeteredSummarizer:
    """The fake summarizer writes the lines; every request the Anthropic summarizer would
    send for the same call is accounted on each meter (one meter per compactor model)."""

    def __init__(
        self, inner: FakeSummarizer, meters: Sequence[CacheMeter], card_meters: Sequence[CacheMeter] = ()
    ) -> None:
        self.inner = inner
        self.meters = list(meters)
        self.card_meters = list(card_meters)  # the people cards' calls, on meters of their own

    async def write_cards(self, tasks: Sequence[CardTask]) -> CardBatch:
        """The fake writes the cards; the request the Anthropic summarizer sends for them is
        accounted on each card meter (the cards as the answer's output)."""
        batch = await self.inner.write_cards(tasks)
        if tasks:
            for meter in self.card_meters:
                meter.account(*cards_request(meter.model, tasks, batch))
        return batch

    async def summarize(
        self,
        context: Sequence[str],
        tasks: Sequence[CompactTask],
        *,
        still_current: StillCurrent | None = None,
    ) -> SummaryBatch:
        batch = await self.inner.summarize(context, tasks, still_current=still_current)
        for meter in self.meters:
            for body, output_tokens in compaction_requests(
                meter.model,
                context,
                tasks,
                batch,
                node_bytes=self.inner.node_bytes,
                overshoot_rate=self.inner.overshoot_rate,
                blocked_context=meter.blocked_context,
                byte_budget=meter.byte_budget,
            ):
                meter.account(body, output_tokens)
        return batch
