"""What the compactor keeps of one chat between its passes: the built nodes this process has
seen, the lines before a task as a row's context, and where a stopped batch stands. A plan reads
the row's parts and their parents again and again, and most of them have not changed since the
last pass.

Planning must cost about the nodes it plans, not the row's length times the passes: after an
import the staged row holds every imported leaf (#ubuntu: 103,683), and a pass plans at most
JOBS x TASKS_PER_CALL tasks. So what a pass derives from the whole row is kept for the next one
and only extended (docs/benchmarks.md: 55 messages/s on #ubuntu before, 409 after).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import overload

from sqlalchemy.ext.asyncio import AsyncSession

from memory.storage.tree_nodes import NodeRecord, fetch
from memory.tree.node import Node, children, end, parent, start, utf8_len
from memory.tree.render import bare_text, row_line_bytes
from memory.tree.row import BatchState

# Rows whose context is kept: a pass reads lines before from the staged row (leaves) and from
# the row as armed (batch merges); two are enough, more would only hold memory.
KEPT_CONTEXTS = 2
# Rows whose unbuilt parts are kept (NodeCache.unbuilt_parts), the last used first: the row as
# armed, the staged row as the last pass left it and as this pass's batch leaves it, and one
# spare; fewer, and the staged rows' turnover pushed the armed row out every few passes.
KEPT_ROWS = 4


class RowContext:
    """A row's built lines, each stripped once, for finding any node's lines before by a
    binary search. Walking the row from its first line for every task cost rows x tasks (a
    10,000-message import: 6.8 million lines stripped for 1,433 tasks, half the compaction's
    time). Records are only added until the cache is cleared, so a context stays true while
    the part it stopped at (the first unbuilt one) is still unbuilt, and grows from there
    when it is not."""

    def __init__(self, row: Sequence[Node], epoch: int) -> None:
        self.row, self.epoch = list(row), epoch
        self._seen: Sequence[Node] = row
        self.ends: list[int] = []  # end(part) of each part of the built prefix
        self.counts = [0]  # counts[k]: how many of the first k parts have a line (erased: none)
        self.lines: list[str] = []  # those lines, bare, oldest first
        self.sums = [0]  # sums[j]: UTF-8 bytes of lines[:j], a newline each
        self.whole = False  # the prefix cannot grow: the row's end, or a part out of order

    def same_row(self, row: Sequence[Node]) -> bool:
        # By identity first: a pass asks for one row's context once per task, and the planner
        # never changes a row in place (a merge or a swap makes a new list).
        if row is self._seen:
            return True
        if len(row) != len(self.row) or list(row) != self.row:
            return False
        self._seen = row
        return True

    def grow(self, cache: NodeCache) -> None:
        """Extend the built prefix past parts built since it stopped."""
        while not self.whole:
            k = len(self.ends)
            if k == len(self.row):
                self.whole = True
                break
            part = self.row[k]
            record = cache.get(part)
            if record is None:
                break  # stop at the first unbuilt line: no placeholder reaches the model
            if self.ends and end(part) <= self.ends[-1]:
                self.whole = True  # a row tiles its range in order (check_tiling); the search needs it
                break
            self.ends.append(end(part))
            if record.text:
                line = bare_text(record.text)
                self.lines.append(line)
                self.sums.append(self.sums[-1] + utf8_len(line) + 1)
            self.counts.append(len(self.lines))

    def before(self, node: Node) -> tuple[LinesBefore, int]:
        """The lines wholly before ``node``'s first message (by coverage, not by a position: a
        merge whose children are not row parts yet has no position in the row), and their bytes."""
        taken = self.counts[bisect_right(self.ends, start(node))]
        return LinesBefore(self.lines, taken), self.sums[taken]


class LinesBefore(Sequence[str]):
    """The first ``count`` lines of a row's context, not copied: a task's lines before are up to
    the whole row (100,000 lines after an import), and a copy for every task was row x tasks.
    The lines are only ever appended to (RowContext.grow), so the prefix never changes."""

    __slots__ = ("_count", "_lines")

    def __init__(self, lines: list[str], count: int) -> None:
        self._lines, self._count = lines, count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, k: int) -> str: ...

    @overload
    def __getitem__(self, k: slice) -> tuple[str, ...]: ...

    def __getitem__(self, k: int | slice) -> str | tuple[str, ...]:
        if isinstance(k, slice):
            first, stop, step = k.indices(self._count)
            return tuple(self._lines[first:stop:step])
        if not -self._count <= k < self._count:
            raise IndexError("line out of range")
        return self._lines[k % self._count]

    def index(self, value: object, first: int = 0, stop: int | None = None) -> int:
        """Where ``value`` first is, searched in C (list.index) within the prefix."""
        bound = self._count if stop is None else min(stop, self._count)
        return self._lines.index(value, first, bound)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[str]:
        return islice(self._lines, self._count)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LinesBefore | tuple | list):
            return len(other) == self._count and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))


class NodeCache:
    """Built nodes of one chat seen by this process. Nodes are immutable until an erasure,
    which bumps the row version; the cache is dropped on any version change, and with it what
    was derived from it (contexts, the stopped batch)."""

    def __init__(self, chat_id: int, tz: str) -> None:
        self.chat_id, self.tz, self.version = chat_id, tz, -1
        self.records: dict[Node, NodeRecord] = {}
        self.unbuilt: set[Node] = set()
        self._bytes: dict[Node, int] = {}
        self.epoch = 0  # bumped when records are dropped: a context of an older epoch is stale
        self.contexts: list[RowContext] = []
        self.batch: BatchState | None = None  # the batch plan_batch stopped, to go on from
        # The staged row's parts as the last pass of this process left them, with the xmin of
        # the row version that pass wrote (memory/compaction/staged_row.py).
        self.staged: tuple[str, list[Node] | None] | None = None
        # Rows (by identity) with their parts that were unbuilt when last asked, [] for a whole row.
        self._gaps: list[tuple[Sequence[Node], list[Node]]] = []
        self._armed: tuple[tuple[int, int, int], list[Node]] | None = None
        self.pairs = PairParents()

    def reset(self, version: int) -> None:
        """Forget what an erasure or edit may have changed: everything, when the row's version
        moved; nodes are never unbuilt otherwise."""
        if version != self.version:
            self.version = version
            self.records.clear()
            self._bytes.clear()
            self.epoch += 1
            self.contexts.clear()
            self.batch = None
            self._gaps.clear()
            self._armed = None
            self.begin_hold()

    def begin_hold(self) -> None:
        """A new hold of the chat's lock: while this process held none, another worker may have
        built what was seen unbuilt. Within one hold only this process builds the chat's nodes
        (and adds them here), so what it saw unbuilt stays unbuilt."""
        self.unbuilt.clear()
        self.pairs = PairParents()

    def armed(self, shown: list[Node], boundary: int, staged_end: int) -> list[Node]:
        """The row as the staged row was armed: the shown parts, then the leaves up to the staged
        boundary. Kept while the version holds (a swap or an erasure moves it), so that the row's
        context is found by identity, not rebuilt and compared at every pass."""
        key = (len(shown), boundary, staged_end)
        if self._armed is None or self._armed[0] != key:
            self._armed = (key, shown + [(0, i) for i in range(boundary, staged_end)])
        return self._armed[1]

    async def unbuilt_parts(self, session: AsyncSession, row: Sequence[Node]) -> list[Node]:
        """The parts of ``row`` that are not built, loaded first. A row asked about before is
        looked at only where it had gaps: within an epoch a built node stays built, so the rest
        of the row needs no look (a scan of the staged row at every pass was 100,000 lookups,
        ~10 ms, for the ~30 parts a pass builds)."""
        kept = next((gaps for seen, gaps in self._gaps if seen is row), None)
        gaps = list(row) if kept is None else kept
        if gaps:
            await self.load(session, gaps)
            records = self.records
            gaps = [node for node in gaps if node not in records]
        self._keep_gaps(row, gaps)
        return gaps

    def whole(self, row: Sequence[Node]) -> None:
        """Note that every part of ``row`` is built (a batch's row: it merges built parents only)."""
        self._keep_gaps(row, [])

    def _keep_gaps(self, row: Sequence[Node], gaps: list[Node]) -> None:
        others = [entry for entry in self._gaps if entry[0] is not row]
        self._gaps = [(row, gaps), *others[: KEPT_ROWS - 1]]

    async def load(self, session: AsyncSession, nodes: Iterable[Node]) -> None:
        # Each node looked up, never `set - records.keys()`: a set minus a dict's keys view walks
        # every key (100,000 after an import), 9 ms a load however few nodes are asked for.
        records, unbuilt = self.records, self.unbuilt
        wanted = {node for node in set(nodes) if node not in records and node not in unbuilt}
        if not wanted:
            return
        found = await fetch(session, self.chat_id, wanted)
        self.records.update(found)
        self.unbuilt.update(wanted - found.keys())

    def add(self, record: NodeRecord) -> None:
        self.records[record.node] = record
        self.unbuilt.discard(record.node)

    @property
    def sizes(self) -> Mapping[Node, int]:
        """Line bytes of the built nodes whose size was asked for (line_bytes), by node."""
        return self._bytes

    def get(self, node: Node) -> NodeRecord | None:
        return self.records.get(node)

    def line_bytes(self, node: Node) -> int | None:
        record = self.records.get(node)
        if record is None:
            return None
        size = self._bytes.get(node)
        if size is None:
            size = self._bytes[node] = row_line_bytes(record.info(), self.tz)
        return size

    def context_of(self, row: Sequence[Node]) -> RowContext:
        """The context of ``row`` as the cache stands now: kept from an earlier call, grown
        past what was built since, or derived anew."""
        context = next((c for c in self.contexts if c.epoch == self.epoch and c.same_row(row)), None)
        if context is None:
            context = RowContext(row, self.epoch)
            self.contexts = [context, *self.contexts[: KEPT_CONTEXTS - 1]]
        context.grow(self)
        return context


class PairParents:
    """The parents of a row's adjacent same-level parts (what a batch asks about first), listed
    once for a row and then only for the pairs its merges make: listing them at every pass was
    a walk of the whole row (100,000 parts after an import)."""

    def __init__(self) -> None:
        self.row: Sequence[Node] | None = None  # the row whose pair parents were handed out
        self._parts: set[Node] = set()
        self._due: list[Node] = []  # pair parents the merges since made, not handed out yet

    def new(self, row: Sequence[Node]) -> list[Node]:
        """The pair parents of ``row`` not handed out before."""
        if row is self.row:
            due, self._due = self._due, []
            return due
        self.row, self._parts, self._due = row, set(row), []
        return [
            parent(left)
            for left, right in zip(row, islice(row, 1, None), strict=False)
            if left[0] == right[0]
        ]

    def moved(self, before: Sequence[Node], after: Sequence[Node], merged: Sequence[Node]) -> None:
        """``after`` is ``before`` with the parents ``merged`` made (in order): note the pairs
        they made with their neighbours."""
        if before is not self.row:
            return
        for node in merged:
            self._parts.difference_update(children(node))
            self._parts.add(node)
        for level, index in merged:
            if (level, index) not in self._parts:
                continue  # merged again later
            if (level, index - 1) in self._parts:
                self._due.append(parent((level, index - 1)))
            if (level, index + 1) in self._parts:
                self._due.append(parent((level, index)))
        self.row = after
