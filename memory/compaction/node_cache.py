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
from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from memory.storage.tree_nodes import NodeRecord, fetch
from memory.tree.node import Node, end, start, utf8_len
from memory.tree.render import bare_text, row_line_bytes
from memory.tree.row import BatchState

# Rows whose context is kept: a pass reads lines before from the staged row (leaves) and from
# the row as armed (batch merges); two are enough, more would only hold memory.
KEPT_CONTEXTS = 2


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

    def before(self, node: Node) -> tuple[tuple[str, ...], int]:
        """The lines wholly before ``node``'s first message (by coverage, not by a position: a
        merge whose children are not row parts yet has no position in the row), and their bytes."""
        taken = self.counts[bisect_right(self.ends, start(node))]
        return tuple(self.lines[:taken]), self.sums[taken]


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

    def reset(self, version: int) -> None:
        if version != self.version:
            self.version = version
            self.records.clear()
            self._bytes.clear()
            self.epoch += 1
            self.contexts.clear()
            self.batch = None
        self.unbuilt.clear()

    async def load(self, session: AsyncSession, nodes: Iterable[Node]) -> None:
        wanted = set(nodes) - self.records.keys() - self.unbuilt  # set operations: rows are long
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
