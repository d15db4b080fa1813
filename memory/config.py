"""The memory engine's constants (DESIGN.md section 7), as one immutable value.

Built once from the settings at start and passed down; the engine never reads the
environment. Benchmarks and tests build their own.
"""

from __future__ import annotations

from dataclasses import dataclass

KB = 1000  # the design's sizes are decimal kilobytes of UTF-8 text (96 KB = 96,000 bytes)


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    node_bytes: int = 512  # target size of one summary line
    view_high: int = 96 * KB  # a row past this is merged in one batch...
    view_low: int = 48 * KB  # ...down to this
    tail_start: int = 48 * KB  # raw tail size that arms compaction
    tail_keep: int = 12 * KB  # newest raw text never compacted by an armed run
    tail_force: int = 96 * KB  # raw tail size that swaps at once, quiet or not
    # Hard ceiling on the raw tail a prompt shows when the compactor is behind (model down):
    # 160 KB ~ 40K tokens, so row (<= 96 KB) + tail + tools stays far below a 200K window.
    tail_cap: int = 160 * KB
    quiet_seconds: float = 30 * 60  # the provider's cache is gone after a quiet half hour
    jobs: int = 8  # compactor calls in flight at once
    tries: int = 5  # attempts per node to get under node_bytes
    retry_seconds: float = 10.0  # wait before a failed node is tried again (no backoff)
    # Tasks sent in one compactor call (they share the context, which is paid once).
    tasks_per_call: int = 4
    # Context slice for compactor calls: whole row lines before the node, 16-32 KB, cut on
    # a 16 KB grid so consecutive calls share the same prefix and read it from the cache.
    context_grid: int = 16 * KB
    timezone: str = "UTC"
