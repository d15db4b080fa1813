"""How long each cache mark of a reply lives: 5 minutes or 1 hour, chosen per chat (pure).

A 5-minute entry costs 1.25x input to write, a 1-hour one 2x; a read costs 0.1x and refreshes
either for free (Sonnet 5.5 list prices, memory/pricing.py). So the choice only matters when
the prefix is written, and the question is whether the chat's next turn comes within 5 minutes
(both read), between 5 minutes and an hour (the 1-hour entry is read, the 5-minute one is gone
and written again at 1.25x), or after an hour (both written; the 1-hour write wasted 0.75x).
With ``q`` the share of the chat's recent gaps between turns in (5 min, 1 h] and ``r`` the share
over an hour, 1-hour marks cost 2r per turn in writes against 1.25(q + r) for 5-minute ones:
1 hour pays when 0.75r < 1.25q.

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
RECENT_GAPS = 8  # enough turns to see a pattern, few enough to follow a chat's change of pace


@dataclass(frozen=True, slots=True)
class MarkLifetimes:
    """The ``ttl`` of each reply cache mark: "5m" or "1h"."""

    system: str = "5m"
    body: str = "5m"  # the <memory> row mark and the <tail> mark
    last: str = "5m"


ALL_FIVE_MINUTES = MarkLifetimes()


def choose_lifetimes(gaps: Sequence[float]) -> MarkLifetimes:
    """The marks for a chat whose recent gaps between turns (seconds) are ``gaps``. With no
    history yet, the first turn of a chat writes at 1 hour: a chat that has just been spoken
    to is likely to be spoken to again within the hour."""
    if not gaps:
        return MarkLifetimes(system="1h", body="1h", last="5m")
    mid = sum(1 for g in gaps if FIVE_MINUTES < g <= ONE_HOUR) / len(gaps)
    long = sum(1 for g in gaps if g > ONE_HOUR) / len(gaps)
    body = "1h" if 1.25 * mid > 0.75 * long else "5m"
    return MarkLifetimes(system="1h", body=body, last="5m")


class TurnGaps:
    """Recent reply turn times per chat, and the marks they call for."""

    def __init__(self, keep: int = RECENT_GAPS) -> None:
        self.keep = keep
        self._last: dict[int, datetime] = {}
        self._gaps: dict[int, deque[float]] = {}

    def lifetimes(self, chat_id: int, now: datetime) -> MarkLifetimes:
        """The marks for a turn of ``chat_id`` at ``now`` (and note the turn)."""
        gaps = self._gaps.setdefault(chat_id, deque(maxlen=self.keep))
        last = self._last.get(chat_id)
        if last is not None:
            gaps.append(max(0.0, (now - last).total_seconds()))
        self._last[chat_id] = now
        return choose_lifetimes(list(gaps))
