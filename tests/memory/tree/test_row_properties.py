"""The memory row (memory/tree/row.py) against brute-force references.

References written here from the spec's description (the OptChat spec rev. 3, sections 2
and 3.3), independently of memory/tree/row.py: Taelin's binary-counter ``push``, an exact
Fraction argmax over all pairs, and a message-by-message tiling check.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.tree.node import Node, children
from memory.tree.row import (
    BatchPlan,
    TilingError,
    check_tiling,
    due,
    is_tiling,
    mergeable_pairs,
    most_due_pair,
    plan_batch,
    row_bytes,
)

# Scaled-down VIEW_HIGH / VIEW_LOW (96 KB / 48 KB in production) so a row of 20..512-byte
# lines crosses HIGH every ~15 messages and a test run sees hundreds of batches.
HIGH, LOW = 4000, 2000


# --- references ---------------------------------------------------------------------------

PushList = tuple[int, int, "PushList"] | None  # (keep bit, state, older entries), newest first


def push(state: int, states: PushList) -> PushList:
    """Taelin's rollback push, life fixed at 0: absorb into the newest entry or carry."""
    if states is None:
        return (0, state, None)
    keep, newest, older = states
    if keep == 0:
        return (1, newest, older)
    return (0, state, push(newest, older))


def push_row(states: PushList, total: int) -> list[Node]:
    """Read a push list as a row: each kept state starts a line that ends at the next one."""
    starts: list[int] = []
    while states is not None:
        starts.append(states[1])
        states = states[2]
    starts.reverse()
    row = []
    for first, stop in zip(starts, [*starts[1:], total], strict=True):
        count = stop - first
        assert count & (count - 1) == 0 and first % count == 0, "push made an unaligned line"
        row.append((count.bit_length() - 1, first // count))
    return row


def brute_due(left: Node, total: int) -> Fraction:
    level, index = left
    return Fraction(total - ((index + 2) * 2**level - 1), 2**level)


def brute_first_due(left: Node, total: int) -> Fraction:
    """Revision 1's rule: measured from the pair's first message (the known bug)."""
    level, index = left
    return Fraction(total - index * 2**level, 2 ** (level + 2))


def brute_argmax(row: list[Node], total: int, score: Callable[[Node, int], Fraction]) -> int | None:
    best, best_score = None, None
    for k in range(len(row) - 1):
        (la, ia), (lb, ib) = row[k], row[k + 1]
        is_pair = la == lb and ia % 2 == 0 and ib == ia + 1
        if is_pair and (best_score is None or score(row[k], total) > best_score):
            best, best_score = k, score(row[k], total)
    return best


def merge(row: list[Node], k: int) -> list[Node]:
    level, index = row[k]
    return [*row[:k], (level + 1, index // 2), *row[k + 2 :]]


def brute_batch(
    row: list[Node], total: int, sizes: Callable[[Node], int | None], target: int, max_needed: int = 8
) -> tuple[list[Node], list[Node], list[Node]]:
    """Merge the argmax pair while over target; from the first unbuilt parent on, freeze the
    row and go on pretending unbuilt parents are 512 bytes. Returns (row, merged, needed)."""
    assumed: dict[Node, int | None] = {}
    merged: list[Node] = []
    needed: list[Node] = []
    stopped_row: list[Node] | None = None
    while sum(assumed.get(n, sizes(n)) or 0 for n in row) > target and len(needed) < max_needed:
        k = brute_argmax(row, total, brute_due)
        if k is None:
            break
        parent = (row[k][0] + 1, row[k][1] // 2)
        if sizes(parent) is None:
            stopped_row = row if stopped_row is None else stopped_row
            needed.append(parent)
            assumed[parent] = 512
        elif stopped_row is None:
            merged.append(parent)
        row = merge(row, k)
    return (row if stopped_row is None else stopped_row), merged, needed


def brute_tiles(parts: list[Node], boundary: int) -> bool:
    if any(level < 0 or index < 0 for level, index in parts):
        return False
    messages = [m for level, index in parts for m in range(index * 2**level, (index + 1) * 2**level)]
    return messages == list(range(boundary))


def line_sizes(seed: int) -> Callable[[Node], int]:
    """Deterministic 20..512-byte line size per node, the same whoever asks first."""
    cache: dict[Node, int] = {}

    def sizes(node: Node) -> int:
        if node not in cache:
            cache[node] = random.Random(f"{seed}:{node}").randint(20, 512)
        return cache[node]

    return sizes


@st.composite
def tilings(draw: st.DrawFn, max_boundary: int = 300) -> tuple[list[Node], int]:
    """A random aligned tiling of [0, B)."""
    boundary = draw(st.integers(0, max_boundary))
    row, position = [], 0
    while position < boundary:
        levels = [lv for lv in range(10) if position % 2**lv == 0 and position + 2**lv <= boundary]
        level = draw(st.sampled_from(levels))
        row.append((level, position >> level))
        position += 2**level
    return row, boundary


# --- tiling -------------------------------------------------------------------------------


def test_check_tiling_names_the_first_problem() -> None:
    check_tiling([(3, 0), (1, 4), (0, 10)], 11)
    check_tiling([], 0)
    with pytest.raises(TilingError, match="part 1 10\\+2 starts at 10 and leaves a gap"):
        check_tiling([(3, 0), (1, 5)], 12)
    with pytest.raises(TilingError, match="part 1 4\\+4 starts at 4 and overlaps"):
        check_tiling([(3, 0), (2, 1)], 8)
    with pytest.raises(TilingError, match="ends at 8, expected 9"):
        check_tiling([(3, 0)], 9)
    with pytest.raises(TilingError, match="negative"):
        check_tiling([(0, -1)], 0)


@given(tilings())
def test_generated_tilings_tile(case: tuple[list[Node], int]) -> None:
    row, boundary = case
    assert is_tiling(row, boundary) and brute_tiles(row, boundary)
    if row:
        assert not is_tiling(row[:-1], boundary)
        assert not is_tiling(row, boundary + 1)


@given(st.lists(st.tuples(st.integers(-1, 4), st.integers(-1, 12)), max_size=8), st.integers(0, 40))
def test_is_tiling_agrees_with_message_by_message_check(parts: list[Node], boundary: int) -> None:
    assert is_tiling(parts, boundary) == brute_tiles(parts, boundary)


# --- due and the pair choice --------------------------------------------------------------


def test_due_is_exact_and_ties_across_levels() -> None:
    assert due((1, 0), 5) == Fraction(2, 2)  # pair 0..3, last 3, (5 - 3) / 2
    assert due((2, 0), 11) == due((1, 2), 9) == 1  # ended 4 ago over 4, 2 ago over 2
    assert due((0, 8), 10) == Fraction(1)
    with pytest.raises(ValueError, match="right half"):
        due((1, 3), 20)


@given(tilings(), st.integers(0, 50))
def test_most_due_pair_is_the_exact_argmax_with_oldest_on_ties(
    case: tuple[list[Node], int], extra: int
) -> None:
    row, boundary = case
    total = boundary + extra  # due measures from T, which may be past the row's end B
    assert most_due_pair(row, total) == brute_argmax(row, total, brute_due)
    brute_pairs = [k for k in range(len(row) - 1) if (row[k + 1][0], row[k + 1][1] - 1) == row[k]]
    assert mergeable_pairs(row) == [k for k in brute_pairs if row[k][1] % 2 == 0]


def test_ties_go_to_the_oldest_pair() -> None:
    row = [(0, 0), (0, 1), (0, 2), (0, 3)]  # due 0+1 = (4-1)/1 = 3 > 2+3 = (4-3)/1 = 1
    assert most_due_pair(row, 4) == 0
    row = [(1, 0), (1, 1), (0, 4), (0, 5)]  # (8-3)/2 = 2.5 vs (8-5)/1 = 3
    assert most_due_pair(row, 8) == 2
    row = [(1, 0), (1, 1), (0, 4), (0, 5)]  # (7-3)/2 = 2 vs (7-5)/1 = 2: tie, oldest wins
    assert most_due_pair(row, 7) == 0


def test_revision_1_example_merges_the_newest_pair() -> None:
    # The notes' counterexample: at T=10 push merges 8-9; the old first-message rule, 0-7.
    row = [(2, 0), (2, 1), (0, 8), (0, 9)]
    assert most_due_pair(row, 10) == 2
    assert brute_argmax(row, 10, brute_first_due) == 0


def _push_matches(steps: int, choose: Callable[[list[Node], int], int | None]) -> int:
    """Fold messages, merging the chosen pair while the row has more lines than push's list."""
    states: PushList = None
    row: list[Node] = []
    matches = 0
    for t in range(steps):
        states = push(t, states)
        expected = push_row(states, t + 1)
        row.append((0, t))
        while len(row) > len(expected):
            k = choose(row, t + 1)
            assert k is not None
            row = merge(row, k)
        matches += row == expected  # each rule folds its own row, never resynced
    return matches


def test_due_rule_reproduces_push_at_every_step() -> None:
    assert _push_matches(20_001, most_due_pair) == 20_001


def test_first_message_rule_does_not_reproduce_push() -> None:
    # Sanity check that the push comparison can fail. 481 of 20,001 is the notes' figure
    # (the OptChat spec rev. 3, section 3.3), so it also cross-checks this file's push reference.
    matches = _push_matches(20_001, lambda row, total: brute_argmax(row, total, brute_first_due))
    assert matches == 481


def test_plan_batch_with_a_line_count_budget_is_push() -> None:
    states: PushList = None
    row: list[Node] = []
    for t in range(2001):
        states = push(t, states)
        expected = push_row(states, t + 1)
        plan = plan_batch([*row, (0, t)], t + 1, lambda node: 1, target=len(expected))
        assert plan.done and plan.parts == expected, t
        row = plan.parts


# --- batches ------------------------------------------------------------------------------

EIGHT_LEAVES = [(0, i) for i in range(8)]
# Their merges in due order at T=8, worked by hand: due 0+2 = 7, 2+2 = 5, 4+2 = 3, then
# 0+4 = 2.5 loses to 4+2 = 3, and so on, like a binary counter.
EIGHT_LEAVES_ORDER = [(1, 0), (1, 1), (1, 2), (2, 0), (1, 3), (2, 1), (3, 0)]


def test_plan_lists_needed_parents_in_due_order_beyond_the_first() -> None:
    leaves_only = lambda node: 100 if node[0] == 0 else None  # noqa: E731
    plan = plan_batch(EIGHT_LEAVES, 8, leaves_only, target=0)
    assert (plan.parts, plan.merged, plan.done) == (EIGHT_LEAVES, [], False)
    assert plan.needed == EIGHT_LEAVES_ORDER  # each after its children
    assert plan_batch(EIGHT_LEAVES, 8, leaves_only, 0, max_needed=3).needed == EIGHT_LEAVES_ORDER[:3]
    # 800 bytes; each assumed parent replaces 200 by 100, so 3 merges reach 500.
    assert plan_batch(EIGHT_LEAVES, 8, leaves_only, 500, estimate=100).needed == EIGHT_LEAVES_ORDER[:3]


def test_plan_stops_at_the_first_unbuilt_parent_instead_of_skipping_it() -> None:
    def lines(node: Node) -> int | None:
        return None if node == (1, 1) else 100

    plan = plan_batch(EIGHT_LEAVES, 8, lines, target=0)
    assert plan.merged == [(1, 0)]  # (1, 2) is built and due next-but-one, yet not merged
    assert plan.parts == [(1, 0), *EIGHT_LEAVES[2:]]
    assert plan.needed[0] == (1, 1) and plan.bytes == 700 and not plan.done


def test_plan_of_a_row_with_no_pairs_cannot_shrink() -> None:
    row = [(3, 0), (2, 2), (1, 6), (0, 14)]
    plan = plan_batch(row, 15, lambda node: 300, target=100)
    assert (plan.parts, plan.merged, plan.needed, plan.done, plan.bytes) == (row, [], [], False, 1200)


def test_a_row_part_must_be_built() -> None:
    with pytest.raises(ValueError, match="0\\+2 is in the row but not built"):
        row_bytes([(1, 0)], lambda node: None)


# --- simulations --------------------------------------------------------------------------


def check_plan(
    before: list[Node],
    plan: BatchPlan,
    total: int,
    lines: Callable[[Node], int | None],
    target: int,
    max_needed: int = 8,
) -> None:
    """Every property a batch plan must have, against the brute-force batch."""
    check_tiling(plan.parts, total)
    for new in plan.parts:  # never split a line: no new part lies strictly inside an old one
        assert not any(o[0] > new[0] and o[1] == new[1] >> (o[0] - new[0]) for o in before)
        assert lines(new) is not None
    assert plan.bytes == row_bytes(plan.parts, lines)
    assert (plan.parts, plan.merged, plan.needed) == brute_batch(before, total, lines, target, max_needed)
    assert plan.done == (plan.bytes <= target)
    if not plan.done:  # over LOW only while waiting on a parent, or with nothing to merge
        assert plan.needed or not mergeable_pairs(plan.parts)
    # needed: unbuilt, unique, and buildable in list order.
    ready: set[Node] = set()
    for node in plan.needed:
        assert lines(node) is None and node not in ready
        assert all(lines(child) is not None or child in ready for child in children(node))
        ready.add(node)


def grow(
    messages: int,
    lines: Callable[[Node], int | None],
    on_message: Callable[[Node], None] = lambda leaf: None,
    on_plan: Callable[[BatchPlan], None] = lambda plan: None,
) -> tuple[list[Node], int]:
    """Append messages one by one with HIGH/LOW batches, checking every plan; return (row, T)."""
    row: list[Node] = []
    target: int | None = None
    for t in range(messages):
        row = [*row, (0, t)]
        on_message((0, t))
        if target is None and row_bytes(row, lines) > HIGH:
            target = LOW
        if target is not None:  # an unfinished batch is retried at each new message
            plan = plan_batch(row, t + 1, lines, target)
            check_plan(row, plan, t + 1, lines, target)
            on_plan(plan)
            row = plan.parts
            target = None if plan.done else target
        check_tiling(row, t + 1)
    return row, messages


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 1200))
def test_batches_with_every_parent_built(seed: int, messages: int) -> None:
    sizes = line_sizes(seed)
    batches: list[BatchPlan] = []
    grow(messages, sizes, on_plan=batches.append)
    for plan in batches:
        assert plan.needed == []
        assert plan.done or not mergeable_pairs(plan.parts)


class Compactor:
    """Builds each parent as its last message arrives, but skips a random share of them;
    a skipped parent (and so everything above it) waits until a batch lists it in ``needed``."""

    def __init__(self, seed: int, skip: float) -> None:
        self.sizes = line_sizes(seed)
        self.rng = random.Random(seed)
        self.skip = skip
        self.built: set[Node] = set()

    def lines(self, node: Node) -> int | None:
        return self.sizes(node) if node[0] == 0 or node in self.built else None

    def after_message(self, node: Node) -> None:
        # Climb while node is a right half whose left half exists: its parent is complete.
        while node[1] % 2 and self.lines((node[0], node[1] - 1)) is not None:
            if self.rng.random() < self.skip:
                return
            node = (node[0] + 1, node[1] // 2)
            self.built.add(node)

    def after_plan(self, plan: BatchPlan) -> None:
        for node in plan.needed[: self.rng.randint(0, len(plan.needed))]:  # some, in order
            self.built.add(node)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 1200), st.sampled_from([0.1, 0.5, 0.9]))
def test_batches_with_unbuilt_parents_stop_and_list_them(seed: int, messages: int, skip: float) -> None:
    compactor = Compactor(seed, skip)
    plans: list[BatchPlan] = []

    def on_plan(plan: BatchPlan) -> None:
        plans.append(plan)
        compactor.after_plan(plan)

    grow(messages, compactor.lines, compactor.after_message, on_plan)  # check_plan on each
    if skip >= 0.5 and messages >= 300:  # the unbuilt path really ran
        assert any(plan.needed for plan in plans)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32), st.integers(40, 1500), st.floats(0.0, 1.0), st.integers(1, 8))
def test_building_needed_in_order_reaches_the_all_built_batch(
    seed: int, messages: int, unbuilt_share: float, max_needed: int
) -> None:
    sizes = line_sizes(seed)
    row, total = grow(messages, sizes)
    row = [*row, *((0, t) for t in range(total, total + 30))]  # a batch's worth of new lines
    total += 30
    all_built = plan_batch(row, total, sizes, LOW)
    rng = random.Random(seed)
    unbuilt: set[Node] = set()
    for node in all_built.merged:  # children come first; an unbuilt child leaves its parent unbuilt
        if rng.random() < unbuilt_share or unbuilt.intersection(children(node)):
            unbuilt.add(node)

    def lines(node: Node) -> int | None:
        return None if node in unbuilt else sizes(node)

    merged: list[Node] = []
    for _ in range(len(all_built.merged) + 1):
        plan = plan_batch(row, total, lines, LOW, max_needed=max_needed)
        check_plan(row, plan, total, lines, LOW, max_needed)
        merged += plan.merged
        row = plan.parts
        if not plan.needed:
            break
        assert 1 <= len(plan.needed) <= max_needed
        unbuilt -= set(plan.needed)  # the compactor builds the list, in order
    assert (row, merged, plan.done) == (all_built.parts, all_built.merged, all_built.done)


# --- a stopped batch going on -------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 300), st.integers(0, 2**32), st.integers(1, 6))
def test_a_batch_gone_on_from_plans_what_a_new_batch_would(leaves: int, seed: int, per_pass: int) -> None:
    """plan_batch(resume=state) after each stop, against plan_batch from scratch on the same
    row: the same plan at every pass while the needed parents get built a few at a time."""
    rng = random.Random(seed)
    sizes: dict[Node, int] = {(0, i): rng.randint(20, 512) for i in range(leaves)}
    row: list[Node] = [(0, i) for i in range(leaves)]
    target = max(1, sum(sizes.values()) // rng.randint(2, 6))
    state = None
    asked: list[Node] = []  # the resumed run's calls of line_bytes beyond ``known``

    def asking(node: Node) -> int | None:
        asked.append(node)
        return sizes.get(node)

    for _ in range(40 * leaves):
        fresh = plan_batch(row, leaves, sizes.get, target, max_needed=per_pass)
        known = {node: size for node, size in sizes.items() if rng.random() < 0.5}
        asked.clear()
        resumed = plan_batch(row, leaves, asking, target, max_needed=per_pass, resume=state, known=known)
        assert resumed == fresh  # parts, merged, bytes, done and needed (state is not compared)
        assert all(node not in known for node in asked)
        assert set(fresh.needed) <= set(asked)  # every unbuilt node was asked for (a planner may build it)
        if fresh.done or not fresh.needed:
            break
        # Some passes build nothing (the stopping parent waits for a retry): the batch stands
        # still while what it lists grows.
        if rng.random() < 0.6:
            for node in fresh.needed:
                left, right = children(node)
                if left in sizes and right in sizes and rng.random() < 0.7:
                    sizes[node] = rng.randint(20, 512)
        row, state = fresh.parts, resumed.state
    else:
        raise AssertionError("the batch never ended")


def test_a_batch_is_not_gone_on_from_for_another_row_or_after_a_failed_run() -> None:
    sizes: dict[Node, int] = {leaf: 100 for leaf in EIGHT_LEAVES}
    stopped = plan_batch(EIGHT_LEAVES, 8, sizes.get, target=0)
    assert stopped.state is not None and stopped.state.continues(EIGHT_LEAVES, 8)
    assert not stopped.state.continues(EIGHT_LEAVES, 9)
    assert not stopped.state.continues(EIGHT_LEAVES[1:], 8)

    def broken(node: Node) -> int | None:
        if node == (0, 0):
            raise RuntimeError("lookup failed")
        return sizes.get(node)

    sizes[(1, 0)] = 100
    with pytest.raises(RuntimeError):
        plan_batch(EIGHT_LEAVES, 8, broken, target=0, resume=stopped.state)
    assert not stopped.state.continues(EIGHT_LEAVES, 8)  # half-run: never gone on from
