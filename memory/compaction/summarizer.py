"""The compactor's view of a model: a list of tasks in, one line per task out.

The interface takes several tasks per call on purpose (docs/design.md section 6): the bill is
mostly the bytes the model writes plus the shared context, so one call that carries the
context once and answers four merges is cheaper than four calls. The first implementations
may still send one task per call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from memory.pricing import USAGE_COUNTERS, Usage


@dataclass(frozen=True, slots=True)
class CompactTask:
    """One node to write.

    ``kind == "compress"``: ``author`` and ``text`` hold one message, whole (never cut).
    ``kind == "merge"``: ``left`` and ``right`` hold the two child lines, whole.
    ``level``/``index`` name the node; they are never shown to the model (no ids in a
    compactor call), only used for logging and to seed deterministic fakes.
    """

    kind: Literal["compress", "merge"]
    level: int
    index: int
    author: str = ""
    text: str = ""
    left: str = ""
    right: str = ""


@dataclass(slots=True)
class CallUsage:
    """Token counts of one or more model calls, in the API's four counters (named as in
    memory/pricing.Usage, the view they are priced in: ``as_usage``)."""

    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_read_tokens: int = 0
    calls: int = 0

    def add(self, other: CallUsage) -> None:
        self.model = self.model or other.model
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_write_5m_tokens += other.cache_write_5m_tokens
        self.cache_write_1h_tokens += other.cache_write_1h_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.calls += other.calls

    def as_usage(self) -> Usage:
        """The pricing view. Pricing a sum is exact except across Haiku 5.5's 100K-token tier,
        which applies per request: compaction prompts are ~5-10K tokens, far below it."""
        return Usage(**{name: getattr(self, name) for name in USAGE_COUNTERS})


@dataclass(slots=True)
class SummaryBatch:
    """The answer to one ``summarize`` call.

    ``lines[k]`` answers ``tasks[k]``; ``None`` means that task failed (an empty reply) and
    the node is retried later. ``tries[k]`` is how many attempts the task took (1..TRIES).
    """

    lines: list[str | None]
    tries: list[int]
    usage: CallUsage = field(default_factory=CallUsage)


class SummarizerError(Exception):
    """The whole call failed (network, 5xx, timeout, garbage). The compactor retries later.

    ``rate_limited``: the API said 429 or 529, a state of the key (shared with replies), not of
    this call; ``retry_after``: seconds the API asked us to wait, when it said.
    """

    def __init__(self, reason: str, *, rate_limited: bool = False, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.rate_limited = rate_limited
        self.retry_after = retry_after


# Whether the work of a call may still be sent: the chat's row has not moved since it was
# planned (an erasure, an edit or a swap moves it). The compactor asks right before a call.
StillCurrent = Callable[[], Awaitable[bool]]


class Summarizer(Protocol):
    async def summarize(
        self,
        context: Sequence[str],
        tasks: Sequence[CompactTask],
        *,
        still_current: StillCurrent | None = None,
    ) -> SummaryBatch:
        """Write one line per task, reading ``context`` (bare memory-row lines, oldest first).

        A call that takes more than one request (a too-long line asked again) awaits
        ``still_current()`` before each request after the first and sends no further request
        once it answers False: an erasure committed while the first request was out must not
        see its words sent once more. The lines already written are returned (the caller
        throws them away: the row moved)."""
        ...


@dataclass(frozen=True, slots=True)
class CardTask:
    """One person's card to write: the name they go by and the memory lines that name them
    (bare line texts, oldest first; never raw messages of others)."""

    person_id: int
    name: str
    lines: tuple[str, ...]


@dataclass(slots=True)
class CardBatch:
    """The answer to one ``write_cards`` call: ``cards[k]`` answers ``tasks[k]`` (None: no card)."""

    cards: list[str | None]
    usage: CallUsage = field(default_factory=CallUsage)


@runtime_checkable
class CardWriter(Protocol):
    """A model that writes people cards (memory/compaction/cards.py): the compactor's model,
    one call for all the cards of a chat."""

    async def write_cards(self, tasks: Sequence[CardTask]) -> CardBatch:
        """One card per task, each at most CARD_BYTES; raises SummarizerError when the call fails."""
        ...
