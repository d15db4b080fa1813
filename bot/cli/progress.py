"""Progress of a long command on stderr: what is done, the rate and an estimate of the time left.

tqdm draws the bar (a well-kept library: rates, estimates and terminal widths are its job). On
a terminal it redraws one line in place; elsewhere (Docker logs, a pipe, a file) a redraw with
``\\r`` would pile up into one ever-growing line, so each redraw becomes a plain line of its
own, at most one every PLAIN_SECONDS. Only counts are shown, never a message's text.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from tqdm import tqdm

from memory import CompactTask, StillCurrent, Summarizer, SummaryBatch

# A line every 10 s in a log: a 10-minute compaction writes 60 lines. The first comes after
# 10 s too, so that a command refused within seconds shows only its one-line reason; a command
# that ends well always shows its last state (see `finished`).
PLAIN_SECONDS = 10.0


class PlainLines:
    """A file for tqdm that writes each redraw as one line (no ``\\r``, no padding)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").strip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


def progress(
    what: str, unit: str, total: int | None, stream: TextIO | None = None, interval: float = PLAIN_SECONDS
) -> tqdm:
    """A bar for ``total`` ``unit``s (None: a count and a rate, no estimate); without a
    terminal, a plain line at most every ``interval`` seconds."""
    stream = stream or sys.stderr
    if stream.isatty():
        return tqdm(total=total, desc=what, unit=f" {unit}", file=stream, dynamic_ncols=True)
    return tqdm(
        total=total,
        desc=what,
        unit=f" {unit}",
        file=PlainLines(stream),
        mininterval=interval,
        delay=interval,
        ncols=100,
        ascii=True,
    )


def finished(bar: tqdm) -> None:
    """The work is done: show its last state, even when it took less than the first line's wait."""
    bar.refresh()


class CountedSummarizer:
    """``inner``, with each line it writes counted on ``bar`` (a failed task counts nothing)."""

    def __init__(self, inner: Summarizer, bar: tqdm) -> None:
        self.inner = inner
        self.bar = bar

    async def summarize(
        self,
        context: Sequence[str],
        tasks: Sequence[CompactTask],
        *,
        still_current: StillCurrent | None = None,
    ) -> SummaryBatch:
        batch = await self.inner.summarize(context, tasks, still_current=still_current)
        written = sum(1 for line in batch.lines if line)
        if self.bar.total is not None and self.bar.n + written > self.bar.total:
            self.bar.total = self.bar.n + written  # the estimate was low: never past 100%
        self.bar.update(written)
        return batch
