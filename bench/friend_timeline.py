"""A friend group's rhythm for a replayed corpus: the reply-cost benchmark's second timeline.

An IRC log comes at IRC pace: one busy channel whose turns are minutes apart, so a reply's
prompt cache is nearly always warm, which flatters the reply figures. A friend group's server
talks in bursts with hours between them. Here each replayed channel gets 100 messages a day (a
server of three such channels: ~300), in 4 to 6 bursts between 09:00 and midnight, the
messages of a burst ~40 s apart (exponential, held between 5 s and 5 minutes), and one message
in 15 is a reply turn (three channels: ~20 replies a day). The corpus's text, authors and order
stay; only the dates are new, drawn from a fixed seed, so every run gets the same timeline.

The first 30 days are warm-up, not counted in the reply figures: the memory fills and the cache
policy learns the chat's pace, as it would in a server's first month. A stretch shorter than
60 days counts its second half.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from memory import ImportedMessage


@dataclass(frozen=True)
class FriendRhythm:
    messages_per_day: int = 100
    bursts_per_day: tuple[int, int] = (4, 6)  # drawn per day, both ends included
    day_from_hour: int = 9
    day_to_hour: int = 24
    gap_mean_seconds: float = 40.0  # between two messages of one burst
    gap_min_seconds: float = 5.0
    gap_max_seconds: float = 300.0
    reply_every: int = 15
    warmup_days: int = 30
    seed: str = "eva-friends-1"
    first_day: datetime = datetime(2026, 1, 5, tzinfo=UTC)

    def describe(self) -> str:
        low, high = self.bursts_per_day
        return (
            f"{self.messages_per_day} messages a day in {low}-{high} bursts between "
            f"{self.day_from_hour:02d}:00 and {self.day_to_hour:02d}:00, ~{self.gap_mean_seconds:.0f} s "
            f"apart in a burst, one message in {self.reply_every} a reply turn, the first "
            f"{self.warmup_days} days not counted (seed {self.seed})"
        )


FRIENDS = FriendRhythm()


def _burst_sizes(rng: random.Random, messages: int, bursts: int) -> list[int]:
    """``messages`` split over ``bursts`` bursts of uneven size (weights 0.5-1.5), none empty."""
    bursts = max(1, min(bursts, messages))
    weights = [rng.uniform(0.5, 1.5) for _ in range(bursts)]
    total = sum(weights)
    sizes = [max(1, int(messages * w / total)) for w in weights]
    while sum(sizes) < messages:  # rounding down left some: the largest bursts take them
        sizes[sizes.index(max(sizes))] += 1
    while sum(sizes) > messages:
        sizes[sizes.index(max(sizes))] -= 1
    return sizes


def day_times(rng: random.Random, rhythm: FriendRhythm, day: datetime, messages: int) -> list[datetime]:
    """The times of one day's ``messages``, in order: each burst starts within its own equal
    slot of the day's window and ends inside it (gaps shrunk when a burst would not fit)."""
    low, high = rhythm.bursts_per_day
    sizes = _burst_sizes(rng, messages, rng.randint(low, high))
    window_start = rhythm.day_from_hour * 3600.0
    slot = (rhythm.day_to_hour - rhythm.day_from_hour) * 3600.0 / len(sizes)
    times: list[datetime] = []
    for number, size in enumerate(sizes):
        gaps = [
            min(
                rhythm.gap_max_seconds,
                max(rhythm.gap_min_seconds, rng.expovariate(1 / rhythm.gap_mean_seconds)),
            )
            for _ in range(size - 1)
        ]
        room = slot - 1.0
        if sum(gaps) > room:
            gaps = [g * room / sum(gaps) for g in gaps]
        start = window_start + number * slot + rng.uniform(0.0, room - sum(gaps))
        at = start
        times.append(day + timedelta(seconds=at))
        for gap in gaps:
            at += gap
            times.append(day + timedelta(seconds=at))
    return times


def retimed(records: Sequence[ImportedMessage], rhythm: FriendRhythm = FRIENDS) -> list[ImportedMessage]:
    """``records`` in order, with the dates of ``rhythm`` (a day's worth of messages per day)."""
    rng = random.Random(rhythm.seed)
    out: list[ImportedMessage] = []
    per_day = rhythm.messages_per_day
    for day_number, first in enumerate(range(0, len(records), per_day)):
        chunk = records[first : first + per_day]
        day = rhythm.first_day + timedelta(days=day_number)
        out.extend(
            replace(r, created_at=at, edited_at=None)
            for r, at in zip(chunk, day_times(rng, rhythm, day, len(chunk)), strict=True)
        )
    return out


def counted_from(messages: int, rhythm: FriendRhythm = FRIENDS) -> datetime:
    """The first moment whose reply turns count: after the warm-up days, or halfway through a
    stretch shorter than twice the warm-up."""
    days = math.ceil(messages / rhythm.messages_per_day)
    warmup = rhythm.warmup_days if days >= 2 * rhythm.warmup_days else days // 2
    return rhythm.first_day + timedelta(days=warmup)
