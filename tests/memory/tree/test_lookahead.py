"""The needed parents of a stopped batch, from a walk kept between passes (memory/tree/lookahead.py),
against a walk from the stop on a plain list (most_due_pair, merge_at): the same list at every
pass while the stopping parent waits for a retry, the others get built, bigger or smaller
than the estimate, and the row nears its target."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.tree.node import Node, children, parent
from memory.tree.row import merge_at, most_due_pair, plan_batch

ESTIMATE = 300


def needed_from_the_stop(
    row: list[Node], total: int, sizes: dict[Node, int], target: int, max_needed: int
) -> list[Node]:
    """What the batch lists, walked from the stop every time on a copy of the row."""
    bytes_now = sum(sizes[node] for node in row)
    assumed: dict[Node, int] = {}
    needed: list[Node] = []
    row = list(row)
    while bytes_now > target and len(needed) < max_needed:
        k = most_due_pair(row, total)
        if k is None:
            break
        left, right = row[k], row[k + 1]
        merged = parent(left)
        if merged not in sizes:
            needed.append(merged)
            assumed[merged] = ESTIMATE
        size_of = {**sizes, **assumed}
        bytes_now += size_of[merged] - size_of[left] - size_of[right]
        row = merge_at(row, k)
    return needed


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 400), st.integers(0, 2**32), st.integers(1, 8), st.integers(2, 30))
def test_the_kept_walk_lists_what_a_walk_from_the_stop_lists(
    leaves: int, seed: int, max_needed: int, divisor: int
) -> None:
    rng = random.Random(seed)
    sizes: dict[Node, int] = {(0, i): rng.randint(20, 512) for i in range(leaves)}
    row: list[Node] = [(0, i) for i in range(leaves)]
    # Targets from half the row down to a thirtieth: near ones make the kept walk start over.
    target = max(1, sum(sizes.values()) * 15 // (divisor * 15 + rng.randint(0, 14)))
    state = None
    waiting = 0  # passes the stopping parent still waits for its retry
    for _ in range(40 * leaves):
        plan = plan_batch(
            row, leaves, sizes.get, target, estimate=ESTIMATE, max_needed=max_needed, resume=state
        )
        assert plan.needed == needed_from_the_stop(plan.parts, leaves, sizes, target, max_needed)
        if plan.done or not plan.needed:
            break
        if waiting == 0 and rng.random() < 0.2:
            waiting = rng.randint(1, 12)
        held = plan.needed[0] if waiting else None
        waiting = max(0, waiting - 1)
        for node in plan.needed:
            if node != held and all(k in sizes for k in children(node)) and rng.random() < 0.8:
                sizes[node] = rng.choice([rng.randint(20, ESTIMATE), rng.randint(ESTIMATE, 900)])
        row, state = plan.parts, plan.state
    else:
        raise AssertionError("the batch never ended")


def test_a_waiting_parent_does_not_make_each_pass_walk_again() -> None:
    """While the stopping parent waits, each pass asks about the parents it listed and the
    merges past the walk's end, not the whole walk from the stop again."""
    leaves = 4096
    sizes: dict[Node, int] = {(0, i): 100 for i in range(leaves)}
    row: list[Node] = [(0, i) for i in range(leaves)]
    asked: list[Node] = []

    def asking(node: Node) -> int | None:
        asked.append(node)
        return sizes.get(node)

    plan = plan_batch(row, leaves, asking, target=1000, estimate=50, max_needed=8)
    held = plan.needed[0]
    walked = []
    for _ in range(200):
        for node in plan.needed[1:]:
            sizes[node] = 50
        asked.clear()
        plan = plan_batch(plan.parts, leaves, asking, 1000, estimate=50, max_needed=8, resume=plan.state)
        assert plan.needed[0] == held and plan.merged == []
        walked.append(len(asked))
    # A walk from the stop would ask about every merge walked so far: thousands by now.
    assert max(walked) < 40, walked
