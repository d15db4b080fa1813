"""When the staged row replaces the shown one (docs/design.md section 7), as pure decisions.

The provider's prompt cache is gone after a quiet half hour anyway, so a swap then costs
nothing extra; a chat that never goes quiet swaps at once when its raw tail passes
TAIL_FORCE, so the prompt stays bounded.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from memory.config import MemoryConfig

SwapReason = Literal["quiet", "forced"]


def is_quiet(last_message_at: datetime | None, now: datetime, config: MemoryConfig) -> bool:
    return last_message_at is None or (now - last_message_at).total_seconds() >= config.quiet_seconds


def swap_reason(
    last_message_at: datetime | None, now: datetime, tail_bytes: int, config: MemoryConfig
) -> SwapReason | None:
    """Why a ready staged row may be swapped in now, or None to keep waiting."""
    if is_quiet(last_message_at, now, config):
        return "quiet"
    if tail_bytes > config.tail_force:
        return "forced"
    return None


def should_arm(tail_bytes: int, config: MemoryConfig) -> bool:
    """Compaction starts once the raw tail passes TAIL_START."""
    return tail_bytes > config.tail_start
