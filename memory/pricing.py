"""List prices and the cost of one call's usage.

Prices are USD per million tokens (docs/design.md, provider facts). Haiku 5.5 bills a whole
request at its higher tier once the prompt (input + cache writes + cache reads) passes 100K
tokens.

Checked on 2026-12-06, model by model:

- Sonnet 5.5: the provider's model page (platform.claude.com/docs/{zh-CN,pt-BR,it}/models/
  sonnet-5-5/overview) gives input $2, output $10, 5-minute write $2.50, 1-hour write $4, and
  cache read $0.20. Price trackers that re-check the provider's English pricing page report the
  read cut to $0.10 from 2026-10-07 (claudit 1.9.2 of 2026-10-24, PromptFuel 1.0.23 of
  2026-10-16, claude-usage 1.5.7 checked 2026-12-01). The table keeps $0.10; since the two
  disagree, the benchmarks give every reply figure at $0.20 too (bench/turns.py).
- Sonnet 4.5 / 4.6: $3 / $15, writes 1.25x and 2x, reads 0.1x (the same pages' older models).
- Haiku 4.5: $1 / $5 (the model pages' comparison table), writes 1.25x and 2x, reads 0.1x.
- Haiku 5.5: $0.10 / $0.50, writes $0.125 / $0.20, reads $0.01; over 100K prompt tokens
  $0.50 / $2.50, $0.625 / $1.00, $0.05 (the trackers above, from the pricing page of 2026-10-07).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from decimal import Decimal

from pydantic import BaseModel

MILLION = Decimal(1_000_000)
COST_KINDS = ("write_5m", "write_1h", "input", "read", "output")  # ModelPrice.cost_by_kind's keys


class ModelPrice(BaseModel):
    input: Decimal
    output: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal
    cache_read: Decimal
    # Optional upper tier: every token of a request whose prompt passes the threshold is
    # billed at these prices instead.
    tier_threshold_tokens: int | None = None
    tier: ModelPrice | None = None
    # Tokens this model counts for a text Haiku 4.5 counts as one token. Only estimates from
    # bytes use it (benchmarks): the API's usage is already in the model's own tokens.
    tokenizer_factor: float = 1.0

    def cost_by_kind(self, usage: Usage) -> dict[str, Decimal]:
        """USD of each kind of token in ``usage`` at these prices (COST_KINDS, in that order)."""
        return {
            "write_5m": usage.cache_write_5m_tokens * self.cache_write_5m / MILLION,
            "write_1h": usage.cache_write_1h_tokens * self.cache_write_1h / MILLION,
            "input": usage.input_tokens * self.input / MILLION,
            "read": usage.cache_read_tokens * self.cache_read / MILLION,
            "output": usage.output_tokens * self.output / MILLION,
        }


def _p(i: str, o: str, w5: str, w1: str, r: str, **kw: object) -> ModelPrice:
    return ModelPrice(
        input=Decimal(i),
        output=Decimal(o),
        cache_write_5m=Decimal(w5),
        cache_write_1h=Decimal(w1),
        cache_read=Decimal(r),
        **kw,  # type: ignore[arg-type]
    )


def default_prices() -> dict[str, ModelPrice]:
    sonnet_4 = _p("3", "15", "3.75", "6", "0.30")
    return {
        "claude-haiku-4-5": _p("1", "5", "1.25", "2", "0.10"),
        "claude-haiku-5-5": _p(
            "0.10",
            "0.50",
            "0.125",
            "0.20",
            "0.01",
            tier_threshold_tokens=100_000,
            tier=_p("0.50", "2.50", "0.625", "1.00", "0.05"),
            tokenizer_factor=1.3,  # "a new tokenizer, ~30% more tokens than Haiku 4.5"
        ),
        "claude-sonnet-4-5": sonnet_4,
        "claude-sonnet-4-6": sonnet_4,
        "claude-sonnet-5-5": _p("2", "10", "2.50", "4", "0.10"),
    }


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_read_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        writes = self.cache_write_5m_tokens + self.cache_write_1h_tokens
        return self.input_tokens + writes + self.cache_read_tokens


# The counters every usage shape shares, by their names in Usage.
USAGE_COUNTERS = tuple(f.name for f in fields(Usage))


@dataclass
class PriceTable:
    prices: dict[str, ModelPrice] = field(default_factory=default_prices)

    def lookup(self, model: str) -> ModelPrice | None:
        """Exact name first, then the longest known name the model id starts with
        (``claude-haiku-4-5-20251001`` is priced as ``claude-haiku-4-5``)."""
        if model in self.prices:
            return self.prices[model]
        matches = [name for name in self.prices if model.startswith(name)]
        return self.prices[max(matches, key=len)] if matches else None

    def cost(self, model: str, usage: Usage) -> Decimal:
        """USD at list price; an unknown model costs 0 (and is visible as such in the ledger)."""
        price = self.lookup(model)
        if price is None:
            return Decimal(0)
        threshold = price.tier_threshold_tokens
        if price.tier is not None and threshold is not None and usage.prompt_tokens > threshold:
            price = price.tier
        return sum(price.cost_by_kind(usage).values(), Decimal(0))
