"""The parents a stopped batch needs next, found by a walk kept from one pass to the next.

Pure planning only: no database, no I/O. A batch stops at its first unbuilt parent and lists
the next unbuilt ones (memory/tree/row.py, plan_batch's ``needed``), going on through the
merges after the stop as if the unbuilt parents existed at ``estimate`` bytes. While the
stopping parent waits for a retry the batch stands still and the walk grows: walking it from
the stop at every pass cost ~6,200 steps a pass on a 30,000-message import, 4.2 million in
all, a quarter of the compaction's time (docs/benchmarks.md, compaction speed). Here the walk
is kept: a pass re-asks only for the parents it listed and goes on from where it ended.

The answer is the one a walk from the stop gives. The walk's merges do not depend on sizes
(BatchState.ahead), built nodes stay built while the walk is kept (an erasure drops the
batch), and the row's bytes after a step are the sum of its lines' bytes, whichever way they
were reached. What changes is a listed parent being built: its real size replaces the
estimate in the steps between its merge and the merge that takes it in. The walk stops
where the row reaches ``target``, so each step's bytes must stay above it: the lowest bytes
any step had, less every shrink since, is checked; where that bound is not enough, the walk
starts again from the stop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from memory.tree.node import Node

Merge = tuple[Node, Node, Node]  # (parent, left, right)


class Sizes(Protocol):
    def of(self, node: Node) -> int | None: ...

    def built(self, node: Node) -> int: ...


class Lookahead:
    """A walk through the merges after a batch's stop: where it ended, what it listed."""

    __slots__ = ("bytes", "cursor", "estimate", "listed", "lowest", "shrunk", "taken_in", "target")

    def __init__(self, stop: int, size: int, target: int, estimate: int) -> None:
        self.target, self.estimate = target, estimate
        self.cursor = stop  # the next merge to walk (an index of BatchState.ahead's list)
        self.listed: list[Node] = []  # unbuilt parents, in walk order
        self.taken_in: dict[Node, bool] = {}  # listed parent -> a walked merge took it in
        self.bytes = size  # the row's bytes after the walked merges, unbuilt at ``estimate``
        self.lowest: int | None = None  # the least bytes checked against target
        self.shrunk = 0  # bytes any walked step may have lost since (listed parents built smaller)

    def settle(self, sizes: Sizes) -> None:
        """Ask again for each listed parent, in walk order (the asking may build it); the built
        ones leave the list, their real size in place of the estimate."""
        still: list[Node] = []
        for node in self.listed:
            size = sizes.of(node)
            if size is None:
                still.append(node)
                continue
            if not self.taken_in.pop(node):
                self.bytes += size - self.estimate
            self.shrunk += max(0, self.estimate - size)
        self.listed = still

    def holds(self) -> bool:
        """Every step walked so far still has more than ``target`` bytes."""
        return self.lowest is None or self.lowest - self.shrunk > self.target

    def walk(
        self,
        ahead: Callable[[int], Merge | None],
        sizes: Sizes,
        max_needed: int,
    ) -> None:
        """Go on until ``max_needed`` parents are listed, the row reaches ``target`` or no
        merge is left."""
        target, estimate = self.target, self.estimate
        while self.bytes > target and len(self.listed) < max_needed:
            merge = ahead(self.cursor)
            if merge is None:
                break
            self.lowest = self.bytes if self.lowest is None else min(self.lowest, self.bytes)
            self.cursor += 1
            merged, left, right = merge
            built = sizes.of(merged)
            if built is None:
                self.listed.append(merged)
                self.taken_in[merged] = False
                built = estimate
            for child in (left, right):
                if child in self.taken_in:
                    self.taken_in[child] = True
                    built -= estimate
                else:
                    built -= sizes.built(child)
            self.bytes += built
