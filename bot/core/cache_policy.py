"""How long each cache mark of a reply lives: 5 minutes or 1 hour, chosen per chat (pure).

A 5-minute entry costs 1.25x input to write, a 1-hour one 2x; a read costs 0.1x and refreshes
either for free (Sonnet 5.5 list prices, memory/pricing.py). So the choice only matters when
the prefix is written, and the question is whether the chat's next turn comes within 5 minutes
(both read), between 5 minutes and an hour (the 1-hour entry is read, the 5-minute one is gone
and written again at 1.25x), or after an hour (both written; the 1-hour write wasted 0.75x).
The rule sums, over the chat's recent gaps, what each choice would pay for the next turn's
prefix (in units of the prefix at input price) and takes the cheaper; a tie keeps 5 minutes.

With keep-warm (bot/core/keep_warm.py, up to ``KEEP_WARM_HOURS``), a 1-hour mark is read again
every PING_EVERY while the chat is quiet, for a horizon chosen per chat: a gap of a few hours
then costs a ping's read (0.1x) per 55 minutes instead of a write. Without it the sums reduce
to the plain rule: 1-hour marks pay when 0.75r < 1.25q, with ``q`` the share of gaps in
(5 min, 1 h] and ``r`` the share over an hour.

Per block:

- system (with the tools before it): constant, and shared by every chat of the process: 1 hour;
- the ``<memory>`` row and the ``<tail>`` marks: by the rule above, from the chat's own gaps;
- the last mark (the end of the request): only the tool loop's next step reads it, seconds
  later: 5 minutes.

The API wants longer lifetimes first in prefix order; this order always satisfies it. The
30-minute quiet swap stays the product's rule (docs/design.md, the swap): a swap rewrites the
row whatever its mark's lifetime.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

FIVE_MINUTES = 300.0
ONE_HOUR = 3600.0
# Writes and reads in units of the input price (Sonnet and Haiku list prices, memory/pricing.py).
# A read is taken at 0.1x, the higher of Sonnet 5.5's two documented read prices (0.05x, 0.1x),
# so that pings are never priced lower than they may cost.
WRITE_5M, WRITE_1H, READ = 1.25, 2.0, 0.1
# A kept-warm chat's prompt is sent again this long after its last request: 5 minutes inside the
# hour, so a keep-warm tick (60 s) late and a slow call still find the 1-hour entry alive.
PING_EVERY = 55 * 60.0
RECENT_GAPS = 8  # enough turns to see a pattern, few enough to follow a chat's change of pace


@dataclass(frozen=True, slots=True)
class MarkLifetimes:
    """The ``ttl`` of each reply cache mark: "5m" or "1h"."""

    system: str = "5m"
    body: str = "5m"  # the <memory> row mark and the <tail> mark
    last: str = "5m"


ALL_FIVE_MINUTES = MarkLifetimes()


def five_minute_cost(gap: float) -> float:
    """What 5-minute marks pay for the next turn's prefix after ``gap`` seconds."""
    return 0.0 if gap <= FIVE_MINUTES else WRITE_5M


def hour_cost(gap: float, kept_warm_for: float = 0.0) -> float:
    """What 1-hour marks pay after ``gap`` seconds: a read for each keep-warm ping (every
    PING_EVERY, while within ``kept_warm_for`` of the turn), and a write again if the entry
    lapsed before the next turn."""
    pings = 0
    while (pings + 1) * PING_EVERY < gap and (pings + 1) * PING_EVERY <= kept_warm_for:
        pings += 1
    alive_until = pings * PING_EVERY + ONE_HOUR
    return READ * pings + (WRITE_1H if gap > alive_until else 0.0)


@dataclass(frozen=True, slots=True)
class CachePlan:
    """A chat's marks for its next turn, and how long after it keep-warm pings it (0: none)."""

    lifetimes: MarkLifetimes
    kept_warm_for: float = 0.0


def choose_plan(gaps: Sequence[float], most_warm_for: float = 0.0) -> CachePlan:
    """The plan for a chat whose recent gaps between turns (seconds) are ``gaps``; pings for at
    most ``most_warm_for`` seconds after a turn (the host's KEEP_WARM_HOURS; 0: no pings).

    Each ping horizon in steps of PING_EVERY is priced on the gaps and the cheapest kept: a
    friend group whose nights are 10 hours long is pinged through them, a chat spoken to once a
    day is not (25 pings cost 2.5x, more than the 1.25x write they would save). With no history
    yet, the first turn of a chat writes at 1 hour, unpinged: a chat that has just been spoken
    to is likely to be spoken to again within the hour."""
    if not gaps:
        return CachePlan(MarkLifetimes(system="1h", body="1h", last="5m"))
    best_for, best = 0.0, sum(hour_cost(g) for g in gaps)
    for k in range(1, int(most_warm_for // PING_EVERY) + 1):
        cost = sum(hour_cost(g, k * PING_EVERY) for g in gaps)
        if cost < best:
            best_for, best = k * PING_EVERY, cost
    if best < sum(five_minute_cost(g) for g in gaps):
        return CachePlan(MarkLifetimes(system="1h", body="1h", last="5m"), best_for)
    return CachePlan(MarkLifetimes(system="1h", body="5m", last="5m"))


class TurnGaps:
    """Recent reply turn times per chat, and the plan they call for."""

    def __init__(self, keep: int = RECENT_GAPS, most_warm_for: float = 0.0) -> None:
        self.keep, self.most_warm_for = keep, most_warm_for
        self._last: dict[int, datetime] = {}
        self._gaps: dict[int, deque[float]] = {}

    def plan(self, chat_id: int, now: datetime) -> CachePlan:
        """The plan for a turn of ``chat_id`` at ``now`` (and note the turn)."""
        gaps = self._gaps.setdefault(chat_id, deque(maxlen=self.keep))
        last = self._last.get(chat_id)
        if last is not None:
            gaps.append(max(0.0, (now - last).total_seconds()))
        self._last[chat_id] = now
        return choose_plan(list(gaps), self.most_warm_for)
