"""Which tasks go in which compactor call, and the one context each call is given (pure).

The model reads ``<chat>`` as "the memory lines that come before your input" (memory/prompts.py),
so a call's context must hold only lines before the input of every task it carries: here it
is a run of whole row lines that every one of its tasks has before its own input.

Cost (docs/design.md, the compactor): the context is ~8K tokens and the tasks ~2K, so what
matters is that the context is read from the prompt cache, not written. Hence one context per
pass, kept while it stays valid (the "sticky" context the compactor holds between plans):

- tasks are ordered by where their input starts in the row; those with at least
  ``min_context_bytes`` of lines before them share one context: the last ``context_bytes``
  of whole lines before the first of them (or the sticky one, while it still lies inside those
  lines and not more than ``context_bytes`` behind the first input);
- tasks nearer the row's start share one small context of their own (under the cache minimum
  anyway);
- a context group is sent as one lead call, alone, that writes the cache, then the rest at
  once, which read it (calls started together would each write it);
- a task that failed inside a multi-task call goes alone (a model that ignores the multi-task
  format then still answers it).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from memory.planner import PlannedTask
from memory.tree import Node, utf8_len


@dataclass(slots=True)
class ContextGroup:
    """Calls that share one context: ``calls[0]`` is the lead, sent before the others."""

    context: tuple[str, ...]
    large: bool  # its tasks have at least min_context_bytes of lines before them
    calls: list[list[PlannedTask]] = field(default_factory=list)


def lines_bytes(lines: Sequence[str]) -> int:
    return sum(utf8_len(line) + 1 for line in lines)


def last_lines(lines: Sequence[str], limit: int) -> tuple[str, ...]:
    """The newest whole lines of ``lines`` that fit in ``limit`` bytes together."""
    used, k = 0, len(lines)
    while k > 0 and used + utf8_len(lines[k - 1]) + 1 <= limit:
        used += utf8_len(lines[k - 1]) + 1
        k -= 1
    return tuple(lines[k:])


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
    return run_end(context, before) is not None


def _usable_sticky(sticky: Sequence[str], before: Sequence[str], context_bytes: int) -> bool:
    ends = run_end(sticky, before)
    return bool(sticky) and ends is not None and lines_bytes(before[ends:]) <= context_bytes


def plan_calls(
    tasks: Sequence[PlannedTask],
    *,
    per_call: int,
    context_bytes: int,
    min_context_bytes: int,
    sticky: Sequence[str] = (),
    alone: Collection[Node] = (),
) -> tuple[list[ContextGroup], tuple[str, ...]]:
    """The plan's tasks as context groups of calls, and the sticky context to keep."""
    per_call = max(1, per_call)
    ordered = sorted(tasks, key=lambda t: (lines_bytes(t.before), t.node))
    groups: list[ContextGroup] = []
    keep: tuple[str, ...] = tuple(sticky)
    members: dict[int, list[PlannedTask]] = {}
    for task in ordered:
        home = next((k for k, g in enumerate(groups) if _fits(g, task, min_context_bytes)), None)
        if home is None:
            large = lines_bytes(task.before) >= min_context_bytes
            if large:
                if _usable_sticky(sticky, task.before, context_bytes):
                    context = tuple(sticky)
                else:
                    context = last_lines(task.before, context_bytes)
                keep = context
            else:
                context = last_lines(task.before, context_bytes)
            groups.append(ContextGroup(context, large))
            home = len(groups) - 1
        members.setdefault(home, []).append(task)
    for k, group in enumerate(groups):
        together = [t for t in members[k] if t.node not in alone]
        group.calls = [together[i : i + per_call] for i in range(0, len(together), per_call)]
        group.calls += [[t] for t in members[k] if t.node in alone]
    return groups, keep


def _fits(group: ContextGroup, task: PlannedTask, min_context_bytes: int) -> bool:
    """A task joins a group of its size class whose context is a run of its own lines before
    (a near-start task never drags a large group down to a small context, nor the reverse)."""
    large = lines_bytes(task.before) >= min_context_bytes
    return group.large == large and is_run_of(group.context, task.before)
