"""Where the reply money goes: each reply turn's bill put down to what changed since the last turn.

A turn's prompt is the previous turn's prompt plus whatever changed in between, and what changed
decides what is written to the cache again. In the order they are tested (the first that holds
names the turn):

- ``first``: the chat's first turn (everything is written);
- ``gap over an hour``: more than an hour since the last turn, so even a 1-hour mark is gone;
- ``row rewritten from its start``: the first line of the row changed (Eva: a swap after a batch
  merge, which rewrites the row's oldest lines; the rolling summary: every rewrite), so the row
  and everything after it is written again;
- ``people cards changed``: the cards before the row were built again (after a swap);
- ``row grew at its end``: a swap added lines after the old ones (the old lines are still read);
- ``gap of 5 minutes to an hour``: nothing in the row changed, but 5-minute marks are gone;
- ``tail growth``: only new messages in the tail since a turn under 5 minutes ago.

The keep-warm pings between turns (bot/core/keep_warm.py) are a cause of their own, with no
turns: what they cost is spread over the run's turns like every other cause.

Each cause's bill is split by what was paid for: cache writes (5 minutes, 1 hour), uncached
input, cache reads and output, at the model's list prices (memory/pricing.py; a model's upper
tier is not applied here: the reply model, Sonnet 5.5, has none).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from bot.core.cache_policy import FIVE_MINUTES, ONE_HOUR
from memory import PromptView
from memory.pricing import COST_KINDS, MILLION, ModelPrice, Usage

FIRST = "first"
GAP_OVER_HOUR = "gap over an hour"
ROW_START = "row rewritten from its start"
CARDS = "people cards changed"
ROW_END = "row grew at its end"
GAP_UNDER_HOUR = "gap of 5 minutes to an hour"
TAIL = "tail growth"
PINGS = "keep-warm pings"
CAUSES = (FIRST, GAP_OVER_HOUR, ROW_START, CARDS, ROW_END, GAP_UNDER_HOUR, TAIL, PINGS)
KINDS = COST_KINDS


def _digest(lines: list[str]) -> bytes:
    return hashlib.sha256("\n".join(lines).encode()).digest()


@dataclass(frozen=True, slots=True)
class TurnShape:
    """What of a turn's prompt decides its cache: when, the people cards, the row."""

    at: datetime
    people: bytes
    row_first: str | None
    row: bytes

    @classmethod
    def of(cls, view: PromptView, at: datetime) -> TurnShape:
        first = view.row_lines[0] if view.row_lines else None
        return cls(at, _digest(view.people_lines), first, _digest(view.row_lines))


def turn_cause(previous: TurnShape | None, now: TurnShape) -> str:
    """The cause a turn's bill is put down to (the module's list, first that holds)."""
    if previous is None:
        return FIRST
    gap = (now.at - previous.at).total_seconds()
    if gap > ONE_HOUR:
        return GAP_OVER_HOUR
    if now.row_first != previous.row_first:
        return ROW_START
    if now.people != previous.people:
        return CARDS
    if now.row != previous.row:
        return ROW_END
    if gap > FIVE_MINUTES:
        return GAP_UNDER_HOUR
    return TAIL


@dataclass
class CauseLedger:
    """Turns and USD by cause and kind, for one meter."""

    turns: dict[str, int] = field(default_factory=dict)
    usd: dict[str, dict[str, Decimal]] = field(default_factory=dict)

    def add(self, cause: str, usage: Usage, price: ModelPrice, *, turn: bool = True) -> None:
        """One request put down to ``cause``: a turn's, or (``turn`` False) a ping's."""
        self.turns[cause] = self.turns.get(cause, 0) + (1 if turn else 0)
        kinds = self.usd.setdefault(cause, {kind: Decimal(0) for kind in KINDS})
        for kind, cost in price.cost_by_kind(usage).items():
            kinds[kind] += cost

    def figures(self, all_turns: int) -> dict[str, dict[str, Any]]:
        """Per cause: its turns, its USD per turn of the whole run (the causes' figures add up
        to the run's cost per turn), and that split by kind."""
        out: dict[str, dict[str, Any]] = {}
        per = max(all_turns, 1)
        for cause in [c for c in CAUSES if c in self.usd] + sorted(set(self.usd) - set(CAUSES)):
            kinds = self.usd[cause]
            out[cause] = {
                "turns": self.turns.get(cause, 0),
                "usd_per_turn": round(float(sum(kinds.values())) / per, 5),
                **{f"{kind}_usd_per_turn": round(float(kinds[kind]) / per, 5) for kind in KINDS},
            }
        return out


def at_cache_read_price(
    cost_usd: float, cache_read_tokens: int, price: ModelPrice, read_price: Decimal
) -> float:
    """``cost_usd`` had its cache reads cost ``read_price`` per million instead of the table's."""
    return cost_usd + float(cache_read_tokens * (read_price - price.cache_read) / MILLION)
