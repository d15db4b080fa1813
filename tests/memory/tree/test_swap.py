"""The swap decision without a database (docs/design.md section 7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.config import MemoryConfig
from memory.tree.swap import should_arm, swap_reason

CFG = MemoryConfig()
NOW = datetime(2026, 10, 14, 21, 0, tzinfo=UTC)


def test_a_quiet_half_hour_swaps() -> None:
    assert swap_reason(NOW - timedelta(minutes=30), NOW, 10_000, CFG) == "quiet"
    assert swap_reason(None, NOW, 0, CFG) == "quiet"


def test_a_busy_chat_waits_until_the_tail_passes_tail_force() -> None:
    busy = NOW - timedelta(minutes=29, seconds=59)
    assert swap_reason(busy, NOW, CFG.tail_force, CFG) is None
    assert swap_reason(busy, NOW, CFG.tail_force + 1, CFG) == "forced"


def test_compaction_arms_past_tail_start() -> None:
    assert not should_arm(CFG.tail_start, CFG)
    assert should_arm(CFG.tail_start + 1, CFG)
