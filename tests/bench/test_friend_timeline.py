"""The friend-group timeline: the corpus's messages in their order, re-dated in daily bursts
between 09:00 and midnight, the same every run."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.friend_timeline import FriendRhythm, counted_from, retimed
from memory import ImportedMessage, read_any

RHYTHM = FriendRhythm()
FIVE_MINUTES = timedelta(minutes=5)


def _records(shared_data: Path, count: int) -> list[ImportedMessage]:
    return list(itertools.islice(read_any(shared_data / "irc" / "rust.jsonl"), count))


def test_the_messages_keep_their_text_and_order_and_get_a_day_of_their_own(shared_data: Path) -> None:
    records = _records(shared_data, 1050)
    timed = retimed(records)
    assert [(r.author_name, r.content) for r in timed] == [(r.author_name, r.content) for r in records]
    assert all(a.created_at < b.created_at for a, b in itertools.pairwise(timed))
    per_day = Counter(r.created_at.date() for r in timed)
    assert sorted(per_day.values()) == [50] + [100] * 10  # 1,050 messages: 10 full days and half of one
    assert min(per_day) == datetime(2026, 1, 5).date()  # the rhythm's first day
    for r in timed:
        day_start = r.created_at.replace(hour=0, minute=0, second=0, microsecond=0)
        assert day_start + timedelta(hours=9) <= r.created_at < day_start + timedelta(hours=24)


def test_a_day_comes_in_four_to_six_bursts_of_quick_messages(shared_data: Path) -> None:
    timed = retimed(_records(shared_data, 3000))
    by_day: dict[object, list[datetime]] = {}
    for r in timed:
        by_day.setdefault(r.created_at.date(), []).append(r.created_at)
    burst_counts, inner_gaps = [], []
    for times in by_day.values():
        gaps = [b - a for a, b in itertools.pairwise(times)]
        # Within a burst no gap passes 5 minutes; the bursts of a day sit in slots of 2.5 hours
        # or more, so a day's long gaps separate its bursts.
        burst_counts.append(1 + sum(1 for g in gaps if g > FIVE_MINUTES))
        inner_gaps += [g.total_seconds() for g in gaps if g <= FIVE_MINUTES]
    assert set(burst_counts) <= {4, 5, 6} and len(set(burst_counts)) >= 2
    assert 25 <= sum(inner_gaps) / len(inner_gaps) <= 60  # ~40 s apart, held within 5 s..5 min
    assert min(inner_gaps) >= 4.9


def test_the_timeline_is_the_same_every_run_and_moves_with_the_seed(shared_data: Path) -> None:
    records = _records(shared_data, 300)
    dates = [r.created_at for r in retimed(records)]
    assert dates == [r.created_at for r in retimed(records)]
    assert dates != [r.created_at for r in retimed(records, FriendRhythm(seed="another"))]


def test_the_warm_up_is_thirty_days_or_half_a_short_stretch() -> None:
    first = datetime(2026, 1, 5, tzinfo=UTC)
    assert counted_from(6_000) == first + timedelta(days=30)  # 60 days: the second month counts
    assert counted_from(103_683) == first + timedelta(days=30)
    assert counted_from(3_600) == first + timedelta(days=18)  # 36 days: the second half
    assert counted_from(150) == first + timedelta(days=1)
