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

from memory.clock import SimulatedClock
from memory.compaction.anthropic_summarizer import first_turn, max_tokens_for, system_blocks
from memory.compaction.prompts import context_block, task_block, too_long_block
from memory.compaction.summarizer import CompactTask, StillCurrent, SummaryBatch
from memory.fakes.prompt_cache import Block, PromptCache, blocks_of_request, estimate_tokens
from memory.fakes.size_model import fake_compress_try, fake_merge_try, node_seed
from memory.fakes.summarizer import FakeSummarizer
from memory.pricing import PriceTable, Usage
from memory.text.lines import cut_at_bytes


def corpus_seconds(clock: SimulatedClock) -> Callable[[], float]:
    """The cache's clock: seconds of simulated (corpus) time."""
    return lambda: clock.now().timestamp()


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

    def account(self, body: Mapping[str, Any], output_tokens: int) -> Usage:
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


def _out_text(lines: Sequence[str], steps: Sequence[int] | None) -> str:
    """The reply a model writes: the line, or one ``<out n="K">`` line per step."""
    if steps is None:
        return "\n".join(lines)
    return "\n".join(f'<out n="{k}">{line}</out>' for k, line in zip(steps, lines, strict=True))


def _first_try(task: CompactTask, overshoot_rate: float, node_bytes: int) -> str:
    seed = node_seed(task.level, task.index)
    if task.kind == "compress":
        return fake_compress_try(task.author, task.text, seed, 1, overshoot_rate, node_bytes)
    return fake_merge_try(task.left, task.right, seed, 1, overshoot_rate, node_bytes)


CONTEXT_BLOCK_LINES = 4
BUDGET_STEP = 128


def level_budget(level: int, node_bytes: int) -> int:
    """What-if: the bytes a line of ``level`` is asked for, growing with the stretch it covers:
    128 for a message, then +128 a level, up to NODE_BYTES (512 from level 3, 8 messages)."""
    return min(node_bytes, BUDGET_STEP * (level + 1))


def context_blocks(context: Sequence[str], tasks: Sequence[CompactTask], node_bytes: int) -> dict[str, Any]:
    """What-if layout of the compactor's user turn: the same ``<chat>`` text cut into blocks of
    4 lines, the mark on the last whole block (as the reply row is), then the task block. The
    context of consecutive calls starts at the same 16 KB grid line, so a later call finds the
    earlier call's mark within the 20-block lookback and reads that prefix."""
    text = context_block(context)
    lines = text.split("\n")
    blocks: list[dict[str, Any]] = []
    for start in range(0, len(lines), CONTEXT_BLOCK_LINES):
        chunk = lines[start : start + CONTEXT_BLOCK_LINES]
        last = start + CONTEXT_BLOCK_LINES >= len(lines)
        blocks.append({"type": "text", "text": "\n".join(chunk) + ("" if last else "\n")})
    whole = [k for k in range(len(blocks)) if (k + 1) * CONTEXT_BLOCK_LINES <= len(lines) - 1]
    if whole:
        blocks[whole[-1]] = {**blocks[whole[-1]], "cache_control": {"type": "ephemeral"}}
    blocks.append({"type": "text", "text": task_block(tasks, node_bytes)})
    return {"role": "user", "content": blocks}


def compaction_requests(
    model: str,
    context: Sequence[str],
    tasks: Sequence[CompactTask],
    batch: SummaryBatch,
    *,
    node_bytes: int,
    overshoot_rate: float,
    blocked_context: bool = False,
    byte_budget: bool = False,
) -> list[tuple[dict[str, Any], int]]:
    """The requests :class:`~memory.compaction.anthropic_summarizer.AnthropicSummarizer` sends for one
    ``summarize`` call whose answer was ``batch``, each with its output tokens: the first
    request (system + cache-marked ``<chat>`` context + task block), then, when a line came
    back too long, the retry in the same conversation (the whole conversation again plus
    the "too long" notes)."""
    many = len(tasks) > 1
    steps = list(range(1, len(tasks) + 1)) if many else None
    firsts = [_first_try(task, overshoot_rate, node_bytes) for task in tasks]
    if byte_budget:
        firsts = [
            cut_at_bytes(line, level_budget(t.level, node_bytes))
            for line, t in zip(firsts, tasks, strict=True)
        ]
    reply = _out_text(firsts, steps)
    opening = context_blocks if blocked_context else first_turn
    messages: list[dict[str, Any]] = [opening(context, tasks, node_bytes)]
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens_for(len(tasks)),
        "system": system_blocks(node_bytes),
        "messages": messages,
    }
    out = [(body, estimate_tokens(reply))]
    retried = [k for k, tries in enumerate(batch.tries) if tries > 1]
    if retried:
        notes = "\n\n".join(too_long_block(firsts[k], node_bytes, k + 1 if many else None) for k in retried)
        seconds = [batch.lines[k] or "" for k in retried]
        again = {
            **body,
            "max_tokens": max_tokens_for(len(retried)),
            "messages": [
                *messages,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": notes},
            ],
        }
        out.append((again, estimate_tokens(_out_text(seconds, [k + 1 for k in retried] if many else None))))
    return out


class MeteredSummarizer:
    """The fake summarizer writes the lines; every request the Anthropic summarizer would
    send for the same call is accounted on each meter (one meter per compactor model)."""

    def __init__(self, inner: FakeSummarizer, meters: Sequence[CacheMeter]) -> None:
        self.inner = inner
        self.meters = list(meters)

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
