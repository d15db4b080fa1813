"""Which tasks go in which compactor call, and the one context each call is given (pure).

The model reads ``<chat>`` as "the memory lines that come before your input" (memory/compaction/prompts.py),
so a call's context must hold only lines before the input of every task it carries: here it
is a run of whole row lines that every one of its tasks has before its own input.

Cost (docs/design.md, the compactor): the context is ~8K tokens and the tasks ~2K, so what
matters is that the context is read from the prompt cache, not written. Hence one context per
pass, kept while it stays valid (the "sticky" context the compactor holds between plans):

- tasks are ordered by where their input starts in the row and put in tiers by how many
  lines they have before them (:func:`context_tier`); the tasks of a tier share one context:
  the tier's sticky one while it still lies, whole and in order, inside their lines before,
  else the row's oldest whole lines that reach the tier's ``min_context_bytes`` (just enough
  to be cached). Every later task of the tier has those lines before its input too, and a
  batch takes its lines before from the row as it was armed (memory/compaction/planner.py), so the
  context is written about once a row, not once a pass (#ubuntu, bench.replay, 20,000
  messages: cache writes $0.035 -> $0.005 per 1,000 messages at Haiku 4.5);
- tasks nearer the row's start share one small context of their own (under the cache minimum
  anyway);
- a context group is sent as one lead call, alone, that writes the cache, then the rest at
  once, which read it (calls started together would each write it);
- a task that failed inside a multi-task call goes alone (a model that ignores the multi-task
  format then still answers it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from memory.compaction.planner import PlannedTask
from memory.tree.node import Node, utf8_len


@dataclass(slots=True)
class ContextGroup:
    """Calls that share one context: ``calls[0]`` is the lead, sent before the others."""

    context: tuple[str, ...]
    tier: int  # context_tier of its tasks: 0 when too close to the row's start to be cached
    calls: list[list[PlannedTask]] = field(default_factory=list)

    @property
    def large(self) -> bool:
        return self.tier > 0


def lines_bytes(lines: Sequence[str]) -> int:
    return sum(utf8_len(line) + 1 for line in lines)


def last_lines(lines: Sequence[str], limit: int) -> tuple[str, ...]:
    """The newest whole lines of ``lines`` that fit in ``limit`` bytes together."""
    used, k = 0, len(lines)
    while k > 0 and used + utf8_len(lines[k - 1]) + 1 <= limit:
        used += utf8_len(lines[k - 1]) + 1
        k -= 1
    return tuple(lines[k:])


def first_lines(lines: Sequence[str], least: int) -> tuple[str, ...]:
    """The oldest whole lines of ``lines`` that hold at least ``least`` bytes together (all of
    them when they hold less)."""
    used = 0
    for k, line in enumerate(lines):
        if used >= least:
            return tuple(lines[:k])
        used += utf8_len(line) + 1
    return tuple(lines)


def run_end(context: Sequence[str], before: Sequence[str]) -> int | None:
    """Where ``context`` ends inside ``before`` when it is a contiguous run of it (the last
    such place), else None. An empty context is a run of anything, ending at 0."""
    if not context:
        return 0
    size = len(context)
    for start in range(len(before) - size, -1, -1):
        if before[start] == context[0] and tuple(before[start : start + size]) == tuple(context):
            return start + size
    return None


def is_run_of(context: Sequence[str], before: Sequence[str]) -> bool:
    """Whether ``context`` is a contiguous run of ``before`` (run_end is not None). Looked at
    where a shared context usually lies first, the start of the row (first_lines), then at
    each place its first line recurs, found by the tuple's own search in C: run_end's walk
    from the end in Python cost ~1,700 steps a task on a 30,000-message import (8 s of 80)."""
    size = len(context)
    if not size:
        return True
    head = tuple(context)
    if tuple(before[:size]) == head:
        return True
    first, last_start = head[0], len(before) - size
    at = 0
    while at <= last_start:
        try:
            at = before.index(first, at, last_start + 1)
        except ValueError:
            return False
        if tuple(before[at : at + size]) == head:
            return True
        at += 1
    return False


def _usable_sticky(sticky: Sequence[str], before: Sequence[str]) -> bool:
    """The sticky context still lies, whole and in order, in the lines before the task. However
    far behind the task it ends: another write costs more than a nearer context is worth (the
    lines right before the input are in the input's own stretch anyway)."""
    return bool(sticky) and is_run_of(sticky, before)


def context_tier(before_bytes: int, min_context_bytes: int, max_tier: int = 1) -> int:
    """0 for tasks with under ``min_context_bytes`` before them (never cached); else how many
    times that they have, up to ``max_tier``. Every tier's lead call writes its context, and on
    #ubuntu (bench.replay, 5,000 messages) three tiers wrote 6x the tokens of one and cost
    more than their longer reads saved, so the compactor uses one tier (max_tier 1)."""
    return min(before_bytes // max(1, min_context_bytes), max_tier)


def plan_calls(
    tasks: Sequence[PlannedTask],
    *,
    per_call: int,
    context_bytes: int,
    min_context_bytes: int,
    sticky: Mapping[int, Sequence[str]] | None = None,
    alone: Collection[Node] = (),
    shared: bool = True,
    max_tier: int = 1,
) -> tuple[list[ContextGroup], dict[int, tuple[str, ...]]]:
    """The plan's tasks as context groups of calls, and the sticky contexts to keep (by tier)."""
    per_call = max(1, per_call)
    ordered = sorted(tasks, key=lambda t: (t.before_bytes, t.node))
    if not shared:
        return _own_contexts(ordered, per_call, alone), {}
    sticky = sticky or {}
    groups: list[ContextGroup] = []
    keep: dict[int, tuple[str, ...]] = {tier: tuple(lines) for tier, lines in sticky.items()}
    members: dict[int, list[PlannedTask]] = {}
    for task in ordered:
        tier = context_tier(task.before_bytes, min_context_bytes, max_tier)
        home = next(
            (k for k, g in enumerate(groups) if g.tier == tier and is_run_of(g.context, task.before)), None
        )
        if home is None:
            old = sticky.get(tier, ())
            if tier and _usable_sticky(old, task.before):
                context = tuple(old)
            elif tier:
                # The row's oldest lines, just enough to be cached: every later task of the
                # tier has them before its input too, so the context is written once a row.
                context = first_lines(task.before, tier * min_context_bytes)
            else:
                context = last_lines(task.before, context_bytes)
            if tier:
                keep[tier] = context
            groups.append(ContextGroup(context, tier))
            home = len(groups) - 1
        members.setdefault(home, []).append(task)
    for k, group in enumerate(groups):
        together = [t for t in members[k] if t.node not in alone]
        group.calls = [together[i : i + per_call] for i in range(0, len(together), per_call)]
        group.calls += [[t] for t in members[k] if t.node in alone]
    return groups, keep


GRID = 16_000


def grid_window(lines: Sequence[str], grid: int = GRID) -> tuple[str, ...]:
    """The last 16-32 KB of ``lines``, cut on a fixed 16 KB grid of the row's bytes (the
    context of each call before contexts were shared; kept for the before/after report)."""
    total = lines_bytes(lines)
    cut = max(0, total // grid - 1) * grid
    offset = 0
    for k, line in enumerate(lines):
        if offset >= cut:
            return tuple(lines[k:])
        offset += utf8_len(line) + 1
    return ()


def _own_contexts(
    ordered: Sequence[PlannedTask], per_call: int, alone: Collection[Node]
) -> list[ContextGroup]:
    together = [t for t in ordered if t.node not in alone]
    calls = [together[i : i + per_call] for i in range(0, len(together), per_call)]
    calls += [[t] for t in ordered if t.node in alone]
    # The lines before the call's first task are before every task of the call (ordered).
    return [ContextGroup(grid_window(call[0].before), call[0].before_bytes >= GRID, [call]) for call in calls]
