"""The memory engine's constants (docs/design.md section 7), as one immutable value.

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
    # Tasks sent in one compactor call (they share the context, which is paid once). Measured
    # with bench.replay at Haiku 5.5, 4 -> 6 tasks: #ubuntu's first 20,000 messages 0.039 ->
    # 0.027 calls and $0.0203 -> $0.0195 per 1,000 messages; rust 0.051 -> 0.035 calls, $0.0261
    # -> $0.0248; stripe 0.073 -> 0.049, $0.0374 -> $0.0354. Fewer calls also spare the rate
    # limit; the share read from the cache falls (0.77 -> 0.71), the bill does not.
    tasks_per_call: int = 6
    # The most a compaction context holds: the small context of tasks near the row's start
    # (the shared one is min_context_bytes, memory/compaction/call_plan.py). 48 KB ~ 12K tokens.
    context_bytes: int = 48 * KB
    timezone: str = "UTC"
    # The shared compaction context: the row's oldest lines reaching this many bytes, written
    # about once a row and read by every call (memory/compaction/call_plan.py); tasks with less than this
    # before their input share one small context of their own. With the ~3.0 KB system prompt,
    # 14 KB is ~4,250 tokens, just over Haiku's 4,096-token cache minimum.
    min_context_bytes: int = 14 * KB
    # A line at most this many bytes over NODE_BYTES is cut at a word boundary here instead of
    # a second request (which resends the whole conversation): first tries overshoot by 5-40
    # bytes in 10% of tasks (the Haiku bake-off behind memory/fakes/summarizer.py).
    trim_slack: int = 48
    # One context per pass shared by its calls (memory/compaction/call_plan.py). False: each call gets its
    # own, the lines before its first task cut on a 16 KB grid, all calls at once: the layout
    # before the shared context, kept so the benchmark report can show both in one run.
    shared_context: bool = True
    # People cards (docs/design.md, people cards): a card for each of the PEOPLE_CARDS most
    # active people of the last PEOPLE_DAYS; 0 cards: none built or shown. The reply prompt
    # shows them within PEOPLE_BYTES (12 cards of at most 300 bytes and a name fit in 4 KB).
    people_cards: int = 12
    people_days: int = 30
    people_bytes: int = 4 * KB
