"""The truth a compactor call's context is checked against, read from the database.

The fake summarizer (tests, bench.replay) asks, on every call, whether the ``<chat>`` context it
was sent holds only lines before each task's input: a contiguous run of the built row lines
that end before the first message the task covers, in the staged row, the shown one, or the
staged row as it was armed. The answer is read here from the tables, not from what the
compactor planned, so a compactor that sends the wrong context fails however it computed it.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.compaction.call_plan import is_run_of
from memory.compaction.summarizer import CompactTask
from memory.fakes.summarizer import ContextCheck
from memory.storage.models import MemoryRow
from memory.storage.tree_nodes import fetch
from memory.tree.node import Node, end, start
from memory.tree.render import bare_text


async def rows_before(session: AsyncSession, chat_id: int, node: Node) -> list[list[str]]:
    """For the staged row, the shown row and the staged row as it was armed (the shown row,
    then the new leaves: a batch takes its lines before from it): the built lines wholly
    before ``node``'s first message, oldest first, up to the first unbuilt part (lines after
    a gap are not "before" in one run)."""
    state = (await session.execute(select(MemoryRow).where(MemoryRow.chat_id == chat_id))).scalar_one()
    rows = [state.staged, state.shown]
    if state.staged is not None:
        leaves = range(int(state.boundary), int(state.staged_boundary or 0))
        rows.append([*state.shown, *([0, i] for i in leaves)])
    out: list[list[str]] = []
    for row in rows:
        if row is None:
            continue
        parts: list[Node] = [(int(a), int(b)) for a, b in row]
        ahead = [p for p in parts if end(p) <= start(node)]
        records = await fetch(session, chat_id, ahead)
        lines: list[str] = []
        for part in ahead:
            record = records.get(part)
            if record is None:
                break
            if record.text:
                lines.append(bare_text(record.text))
        out.append(lines)
    return out


def context_violations(context: Sequence[str], rows: Sequence[Sequence[Sequence[str]]]) -> int:
    """How many tasks (one entry of ``rows`` each: its candidate rows' lines before) were
    given a context that is not a run of their lines before in any of those rows."""
    return sum(1 for candidates in rows if not any(is_run_of(context, lines) for lines in candidates))


def database_context_check(sessions: async_sessionmaker[AsyncSession], chat_id: int) -> ContextCheck:
    """A :data:`~memory.fakes.summarizer.ContextCheck` for one chat, read at call time."""

    async def check(context: Sequence[str], tasks: Sequence[CompactTask]) -> int:
        async with sessions() as session:
            truth = [await rows_before(session, chat_id, (t.level, t.index)) for t in tasks]
        return context_violations(context, truth)

    return check
