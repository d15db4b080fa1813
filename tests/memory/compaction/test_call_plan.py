"""Which tasks share a compactor call and the one context each call gets (pure, no database)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.compaction.call_plan import is_run_of, last_lines, lines_bytes, plan_calls, run_end
from memory.compaction.planner import PlannedTask
from memory.compaction.summarizer import CompactTask

ROW = tuple(f"line {k:02d} " + "x" * 91 for k in range(60))  # 100 bytes a line with its newline


def task(position: int, level: int = 1) -> PlannedTask:
    """A merge whose input starts at row line ``position``: ROW[:position] is before it."""
    node = (level, position)
    return PlannedTask(
        node, CompactTask("merge", level, position, left="a", right="b"), ROW[:position], None, None
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=14), st.lists(st.sampled_from("abcd"), max_size=5))
def test_is_run_of_agrees_with_run_end(before: list[str], context: list[str]) -> None:
    """Few distinct lines, so that runs recur, start, end and half-match anywhere."""
    assert is_run_of(context, before) == (run_end(context, before) is not None)
    assert is_run_of(tuple(before[2:5]), before)


def test_last_lines_keeps_whole_newest_lines_within_the_budget() -> None:
    assert last_lines(ROW[:10], 350) == ROW[7:10]  # 3 lines of 100 bytes; a 4th would be 400
    assert last_lines(ROW[:10], 99) == ()
    assert lines_bytes(ROW[:3]) == 300


def test_run_end_finds_contiguous_runs_only() -> None:
    assert run_end(ROW[3:6], ROW[:10]) == 6
    assert run_end((), ROW[:2]) == 0
    assert run_end((ROW[3], ROW[5]), ROW[:10]) is None  # a gap is not a run
    assert not is_run_of(ROW[8:12], ROW[:10])  # runs past the end: holds lines after the input


def test_every_call_gets_a_context_of_lines_before_each_of_its_tasks() -> None:
    tasks = [task(p) for p in (40, 2, 55, 25, 30, 5, 50, 45, 20, 35)]
    groups, sticky = plan_calls(tasks, per_call=3, context_bytes=1500, min_context_bytes=1000)
    seen = []
    for group in groups:
        for call in group.calls:
            for t in call:
                assert is_run_of(group.context, ROW[: t.node[1]]), (t.node, len(group.context))
                seen.append(t.node)
    assert sorted(seen) == sorted(t.node for t in tasks)
    large = [g for g in groups if g.large]
    small = [g for g in groups if not g.large]
    # One shared context for all tasks with >= 1,000 bytes before them: the row's oldest lines
    # that reach 1,000 bytes (10 lines), before every one of them, so every call reads one prefix.
    assert len(large) == 1 and large[0].context == ROW[:10] and sticky == {1: ROW[:10]}
    # Tasks at 2 and 5 have too little before them to be cached: their own small context.
    assert len(small) == 1 and small[0].context == ROW[:2]
    assert [len(c) for c in large[0].calls] == [3, 3, 2]


def test_a_still_valid_sticky_context_is_kept_and_a_stale_one_replaced() -> None:
    tasks = [task(p) for p in (30, 34)]
    kept, sticky = plan_calls(
        tasks, per_call=4, context_bytes=1500, min_context_bytes=1000, sticky={1: ROW[12:27]}
    )
    assert kept[0].context == ROW[12:27] and sticky == {1: ROW[12:27]}
    # Far behind the first input, it is still lines before it: kept (no second write).
    far = [task(50)]
    kept, sticky = plan_calls(
        far, per_call=4, context_bytes=1500, min_context_bytes=1000, sticky={1: ROW[12:27]}
    )
    assert kept[0].context == ROW[12:27] and sticky == {1: ROW[12:27]}
    # Past the first input (it would hold the input's own lines or later ones): replaced.
    near = [task(20)]
    moved, sticky = plan_calls(
        near, per_call=4, context_bytes=1500, min_context_bytes=1000, sticky={1: ROW[12:27]}
    )
    assert moved[0].context == ROW[:10] and sticky == {1: ROW[:10]}
    # The new context is the row's oldest lines: every later task of the tier has them before
    # its input, however near the row's start, so it is kept (written once a row).
    nearest = [task(10), task(11)]
    kept, sticky = plan_calls(nearest, per_call=4, context_bytes=1500, min_context_bytes=1000, sticky=sticky)
    assert kept[0].context == ROW[:10] and sticky == {1: ROW[:10]}
    # Lines the row no longer has (merged away since): not a run of the lines before.
    gone = (ROW[12], "a line merged away since", ROW[14])
    fresh, _ = plan_calls(tasks, per_call=4, context_bytes=1500, min_context_bytes=1000, sticky={1: gone})
    assert fresh[0].context == ROW[:10]


def test_a_task_that_failed_in_a_group_goes_alone() -> None:
    tasks = [task(p) for p in (20, 21, 22, 23)]
    groups, _ = plan_calls(
        tasks, per_call=4, context_bytes=1500, min_context_bytes=1000, alone={(1, 21), (1, 23)}
    )
    assert [[t.node for t in call] for call in groups[0].calls] == [[(1, 20), (1, 22)], [(1, 21)], [(1, 23)]]


def test_tasks_deep_in_the_row_share_a_full_size_context_of_their_own_tier() -> None:
    tasks = [task(p) for p in (12, 14, 33, 40, 52)]
    groups, sticky = plan_calls(tasks, per_call=4, context_bytes=3000, min_context_bytes=1000, max_tier=3)
    by_tier = {g.tier: g for g in groups}
    # Tier 1: 1,000-2,000 bytes before (12, 14); tier 2: 2,000-3,000 (none); tier 3: >= 3,000.
    assert sorted(by_tier) == [1, 3]
    assert by_tier[1].context == ROW[:10] and by_tier[3].context == ROW[:30]
    assert sticky == {1: ROW[:10], 3: ROW[:30]}
    for group in groups:
        assert all(is_run_of(group.context, ROW[: t.node[1]]) for call in group.calls for t in call)
