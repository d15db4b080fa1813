"""The memory row: which nodes the model reads, and which pairs a batch merges.

Pure planning only: no database, no I/O. docs/design.md section 7; the rule is revision 3 of
the OptChat memory spec, as that section states it.

The row is a list of built nodes tiling ``[0, B)``, oldest first. When it grows past
``VIEW_HIGH`` a batch merges it down to ``VIEW_LOW`` by repeatedly replacing the most due
sibling pair ``(l, i), (l, i + 1)`` by its parent, where

    due = (T - last) / 2**l,   last = (i + 2) * 2**l - 1   (the pair's last message)

and ties go to the oldest pair. With the row's line count as the budget this reproduces
Taelin's binary-counter ``push`` at every step, so a level-l line changes about once per
2**l messages and the start of the row stays byte-identical (and cached) between batches.
The older rule measured from the pair's *first* message and matched push at only 481 of
20,001 steps; tests/memory/tree/test_row_properties.py checks both numbers.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import compress

from memory.tree.lookahead import Lookahead, Merge
from memory.tree.node import Node, address, end, parent, start

LineBytes = Callable[[Node], int | None]
"""Size in bytes of a built node's line, or None when the node is not built."""


class TilingError(ValueError):
    """A row does not tile ``[0, B)``: a gap, an overlap, a bad node or a wrong end."""


def check_tiling(parts: Sequence[Node], boundary: int) -> None:
    """Raise :class:`TilingError` naming the first problem; return if the row is valid.

    Nodes are aligned by construction (``(l, i)`` starts at ``i * 2**l``), so a valid row
    only needs non-negative nodes placed end to end from 0 to ``boundary``.
    """
    position = 0
    for k, node in enumerate(parts):
        level, index = node
        if level < 0 or index < 0:
            raise TilingError(f"part {k} {node} has a negative level or index")
        if start(node) != position:
            relation = "leaves a gap after" if start(node) > position else "overlaps"
            raise TilingError(
                f"part {k} {address(node)} starts at {start(node)} and {relation} "
                f"the previous part, which ended at {position}"
            )
        position = end(node)
    if position != boundary:
        raise TilingError(f"the row ends at {position}, expected {boundary}")


def is_tiling(parts: Sequence[Node], boundary: int) -> bool:
    """True when ``parts`` tile ``[0, boundary)`` oldest first (see :func:`check_tiling`)."""
    try:
        check_tiling(parts, boundary)
    except TilingError:
        return False
    return True


def _is_pair(left: Node, right: Node) -> bool:
    """Both halves of one parent: same level, left index even, right right after it."""
    return left[0] == right[0] and left[1] % 2 == 0 and right[1] == left[1] + 1


def mergeable_pairs(parts: Sequence[Node]) -> list[int]:
    """Positions ``k`` where ``parts[k], parts[k + 1]`` can be replaced by their parent."""
    return [k for k in range(len(parts) - 1) if _is_pair(parts[k], parts[k + 1])]


def _due_numerator(pair_left: Node, total: int) -> int:
    """``T - last`` for the pair starting at ``pair_left``; due is this over ``2**l``."""
    level, index = pair_left
    last = ((index + 2) << level) - 1
    return total - last


def due(pair_left: Node, total: int) -> Fraction:
    """How long ago the pair ended, in units of its own line size, exactly.

    Exact (a Fraction, not a float) because ties are common (e.g. a level-1 pair ending
    2 messages ago and a level-2 pair ending 4 ago are both due 1) and the tie rule,
    oldest first, is part of what keeps the order equal to the binary counter.
    """
    level, index = pair_left
    if index % 2:
        raise ValueError(f"{address(pair_left)} is a right half; a pair starts at an even index")
    return Fraction(_due_numerator(pair_left, total), 1 << level)


def most_due_pair(parts: Sequence[Node], total: int) -> int | None:
    """Position of the most due sibling pair (ties: the oldest), or None if there is none.

    Compared by integer cross-multiplication, ``a / 2**la > b / 2**lb`` iff
    ``a * 2**lb > b * 2**la``: exact like :func:`due` but without building Fractions,
    since a batch on a ~400-line row scans ~400 pairs for each of ~200 merges.
    """
    best: int | None = None
    best_numerator = 0
    best_level = 0
    for k in mergeable_pairs(parts):
        level = parts[k][0]
        numerator = _due_numerator(parts[k], total)
        # Strict ">" while scanning oldest to newest keeps the oldest pair on a tie.
        if best is None or numerator << best_level > best_numerator << level:
            best, best_numerator, best_level = k, numerator, level
    return best


def merge_at(parts: Sequence[Node], k: int) -> list[Node]:
    """A new row with the pair at ``k, k + 1`` replaced by its parent."""
    if not 0 <= k < len(parts) - 1 or not _is_pair(parts[k], parts[k + 1]):
        raise ValueError(f"positions {k} and {k + 1} are not a sibling pair")
    return [*parts[:k], parent(parts[k]), *parts[k + 2 :]]


def row_bytes(parts: Sequence[Node], line_bytes: LineBytes) -> int:
    """Total bytes of the row's lines. Every part of a row must be built."""
    total = 0
    for node in parts:
        total += _built_size(node, line_bytes)
    return total


def _built_size(node: Node, line_bytes: LineBytes) -> int:
    size = line_bytes(node)
    if size is None:
        raise ValueError(f"{address(node)} is in the row but not built")
    return size


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """What one batch can do now, and what the compactor must build for it to go on.

    ``parts``: the row after the merges whose parents are built, in due order, stopping
    before the first merge whose parent is not built (skipping it would break the
    binary-counter order and rewrite old lines early).
    ``merged``: the parents those merges put in the row, in order.
    ``bytes``: :func:`row_bytes` of ``parts``.
    ``done``: ``bytes <= target``.
    ``needed``: unbuilt parents the batch will want next, in due order: the one that
    stopped it, then those of a hypothetical continuation that assumes each needed parent
    gets built at ``estimate`` bytes. Each needed parent's two children are built or
    earlier in the list, so building in list order always works.
    """

    parts: list[Node]
    merged: list[Node] = field(default_factory=list)
    bytes: int = 0
    done: bool = False
    needed: list[Node] = field(default_factory=list)
    # Where a stopped batch stands, to go on from there (plan_batch's ``resume``) instead of
    # building the pairs' heap again; None when the batch ended.
    state: BatchState | None = field(default=None, compare=False, repr=False)

    @property
    def merges(self) -> int:
        return len(self.merged)


class BatchState:
    """A stopped batch: its row with the heap of pairs, and the row's bytes. Going on from it
    is what a new plan_batch over ``parts`` would do (the order of merges depends only on the
    row and ``total``), without the row-long build: after an import the staged row holds every
    imported leaf (~100,000), and building its heap again at every pass made planning cost
    row x passes (docs/benchmarks.md, compaction speed)."""

    def __init__(self, parts: Sequence[Node], total: int, size: int) -> None:
        self.row = _LinkedRow(parts, total)
        self.total, self.size = total, size
        # The row where the batch stopped; None while a plan_batch runs on it, so that a run
        # that raised half-way is never gone on from.
        self.parts: list[Node] | None = list(parts)
        # The merges after the stop, in due order, as (parent, left, right): the continuation
        # that lists the needed parents walks them at every pass, and while the stopping parent
        # waits for a retry the walk grows (a 10,000-message import: 2,000 merges deep for 70
        # passes). They are found once, on a copy of the row, and the batch's own merges take
        # them off the front: the order of merges depends only on the row.
        self._ahead: list[tuple[Node, Node, Node]] = []
        self._taken = 0  # merges of _ahead the batch has made since
        self._ahead_row: _LinkedRow | None = None  # the row after all of _ahead
        self._ahead_ends = False  # no pair is left after _ahead
        # The walk that listed the needed parents, kept while the indices of _ahead hold.
        self.lookahead: Lookahead | None = None

    @property
    def position(self) -> int:
        """Where the batch stands in the list of merges ``ahead`` walks."""
        return self._taken

    def continues(self, parts: Sequence[Node], total: int) -> bool:
        """Whether a batch over ``parts`` and ``total`` is this one going on."""
        if total != self.total or self.parts is None:
            return False
        return parts is self.parts or self.parts == list(parts)

    def merge(self, k: int) -> Node:
        """The batch's own next merge (slot ``k`` of its row)."""
        made = self.row.merge(k)
        if self._taken < len(self._ahead):
            self._taken += 1  # the same merge as the front of _ahead
            if self._taken > 4096 and self._taken * 2 > len(self._ahead):
                del self._ahead[: self._taken]
                self._taken, self.lookahead = 0, None
        else:
            self._ahead, self._taken, self._ahead_row, self._ahead_ends = [], 0, None, False
            self.lookahead = None
        return made

    def at(self, index: int) -> Merge | None:
        """The merge at ``index`` of the list ``ahead`` walks (``_taken``: where the batch stands)."""
        return self.ahead(index - self._taken)

    def ahead(self, i: int) -> Merge | None:
        """The ``i``-th merge after where the batch stands (0: the one it stopped at), or None
        when no pair is left by then."""
        wanted = self._taken + i
        while wanted >= len(self._ahead) and not self._ahead_ends:
            if self._ahead_row is None:
                self._ahead_row = self.row.copy()
            k = self._ahead_row.most_due()
            if k is None:
                self._ahead_ends = True
                break
            left, right = self._ahead_row.pair(k)
            self._ahead.append((parent(left), left, right))
            self._ahead_row.merge(k)
        return self._ahead[wanted] if wanted < len(self._ahead) else None


class _LinkedRow:
    """The row as a linked list plus a heap of its sibling pairs: the most due pair in
    O(log n) instead of a scan. A 3,500-line imported row merged down to 48 KB takes
    ~3,000 merges; scanning for each was 10^7 steps (seconds), the heap is ~10^4.

    Merging a pair never breaks another candidate pair: a left half has an even index and
    a right half an odd one, so each node belongs to at most one sibling pair. A merge only
    adds the new parent's pairs with its neighbours.
    """

    def __init__(self, parts: Sequence[Node], total: int) -> None:
        self.total = total
        self.nodes = list(parts)
        count = len(self.nodes)
        self.next = list(range(1, count + 1))
        self.prev = list(range(-1, count - 1))
        self.alive = [True] * count
        self.heap: list[tuple[int, int, int, Node]] = []
        for k in range(count - 1):
            self._push(k)

    def _push(self, k: int) -> None:
        j = self.next[k] if k >= 0 else -1
        if k < 0 or j >= len(self.nodes) or not _is_pair(self.nodes[k], self.nodes[j]):
            return
        node = self.nodes[k]
        # Max-heap on due (negated), ties to the oldest (smallest first message). due is
        # (T - last) / 2**l; scaled by 2**64 it is an exact integer for any level below 64,
        # and integers compare ~10x faster than Fractions (a 3,500-line batch pushes ~370K).
        scaled = _due_numerator(node, self.total) << (64 - node[0])
        heapq.heappush(self.heap, (-scaled, start(node), k, node))

    def most_due(self) -> int | None:
        """Slot of the left half of the most due pair, or None when no pair is left."""
        while self.heap:
            _, _, k, node = self.heap[0]
            j = self.next[k]
            if (
                self.alive[k]
                and self.nodes[k] == node
                and j < len(self.nodes)
                and _is_pair(node, self.nodes[j])
            ):
                return k
            heapq.heappop(self.heap)
        return None

    def pair(self, k: int) -> tuple[Node, Node]:
        return self.nodes[k], self.nodes[self.next[k]]

    def merge(self, k: int) -> Node:
        heapq.heappop(self.heap)  # the entry most_due() just returned
        j = self.next[k]
        self.nodes[k] = parent(self.nodes[k])
        self.alive[j] = False
        self.next[k] = self.next[j]
        if self.next[j] < len(self.nodes):
            self.prev[self.next[j]] = k
        self._push(self.prev[k])
        self._push(k)
        return self.nodes[k]

    def parts(self) -> list[Node]:
        return list(compress(self.nodes, self.alive))

    def copy(self) -> _LinkedRow:
        twin = _LinkedRow.__new__(_LinkedRow)
        twin.total, twin.nodes, twin.next = self.total, list(self.nodes), list(self.next)
        twin.prev, twin.alive, twin.heap = list(self.prev), list(self.alive), list(self.heap)
        return twin


def plan_batch(
    parts: Sequence[Node],
    total: int,
    line_bytes: LineBytes,
    target: int,
    *,
    estimate: int = 512,
    max_needed: int = 8,
    resume: BatchState | None = None,
    known: Mapping[Node, int] | None = None,
) -> BatchPlan:
    """Merge the most due pairs until the row is at most ``target`` bytes.

    ``total`` is ``T``, the chat's message count, which ``due`` measures from. The order
    of merges depends only on ``parts`` and ``total``; line sizes only decide where the
    batch stops. So a batch interrupted by an unbuilt parent resumes, once ``needed`` is
    built, exactly where it would have gone anyway.

    The plan stops (``done`` False, ``needed`` empty) when no sibling pair is left: a row
    of one line per level cannot shrink until more messages arrive.

    ``resume``: a stopped batch (BatchPlan.state) to go on from when ``parts`` is where it
    stopped. ``known``: sizes ``line_bytes`` would answer without doing anything else, looked
    up first (a planner's ``line_bytes`` may build a free parent: that call is still made for
    every node not in ``known``).
    """
    if max_needed < 1:
        raise ValueError("max_needed must be at least 1")
    sizes = _Sizes(line_bytes, known or {})
    if resume is not None and resume.continues(parts, total):
        state = resume
    else:
        state = BatchState(parts, total, sum(sizes.built(node) for node in parts))
    row, size, before = state.row, state.size, state.parts
    state.parts = None
    merged: list[Node] = []
    while size > target:
        k = row.most_due()
        if k is None:
            break
        left, right = row.pair(k)
        built = sizes.of(parent(left))
        if built is None:
            # Without a merge the row is the one it stopped at before, handed out again (the
            # same list: a pass asks ~2.5 times, and listing 100,000 parts is ~5 ms each).
            stopped = before if before is not None and not merged else row.parts()
            state.parts, state.size = stopped, size
            needed = _needed_parents(state, sizes, size, target, estimate, max_needed)
            return BatchPlan(stopped, merged, size, done=False, needed=needed, state=state)
        size += built - sizes.built(left) - sizes.built(right)
        merged.append(state.merge(k))
    return BatchPlan(row.parts(), merged, size, done=size <= target)


class _Sizes:
    """line_bytes, asked only for what ``known`` does not hold."""

    def __init__(self, line_bytes: LineBytes, known: Mapping[Node, int]) -> None:
        self.line_bytes, self.known = line_bytes, known

    def of(self, node: Node) -> int | None:
        size = self.known.get(node)
        return size if size is not None else self.line_bytes(node)

    def built(self, node: Node) -> int:
        size = self.known.get(node)
        return size if size is not None else _built_size(node, self.line_bytes)


def _needed_parents(
    state: BatchState,
    sizes: _Sizes,
    size: int,
    target: int,
    estimate: int,
    max_needed: int,
) -> list[Node]:
    """Continue the batch from where ``state`` stopped, pretending unbuilt parents exist at
    ``estimate`` bytes (the merges come from BatchState.ahead; the row is not changed).

    Called when the most due pair's parent is unbuilt, so the first entry is that parent.
    Listing the next ones too lets the compactor build up to ``JOBS`` (8) at once instead
    of one round trip per merge. Every node in the hypothetical row is built or already
    listed, so each listed parent's children are built or listed before it. The walk is kept
    in ``state`` for the next pass (memory/tree/lookahead.py).
    """
    walk = state.lookahead
    if walk is not None and (
        walk.cursor < state.position or (walk.target, walk.estimate) != (target, estimate)
    ):
        walk = None
    if walk is not None:
        walk.settle(sizes)
        if not walk.holds():
            walk = None
    if walk is None:
        walk = Lookahead(state.position, size, target, estimate)
    state.lookahead = walk
    walk.walk(state.at, sizes, max_needed)
    return list(walk.listed)
