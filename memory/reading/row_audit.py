"""Read-only checks of one chat's row and tree against the invariants of docs/design.md (the
memory algorithm), for the replay benchmark, which checks them after every swap.

Each function reads in its own session; none writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.config import MemoryConfig
from memory.reading.view import row_lines
from memory.storage.log import range_bytes
from memory.storage.models import MemoryRow, TreeNode
from memory.storage.tree_nodes import fetch
from memory.tree.render import row_line_bytes
from memory.tree.row import is_tiling, mergeable_pairs


@dataclass
class RowCheck:
    """The checked row's bytes and every invariant it breaks (one sentence each)."""

    size: int
    problems: list[str] = field(default_factory=list)


async def check_row(
    sessions: async_sessionmaker[AsyncSession],
    chat_id: int,
    config: MemoryConfig,
    *,
    after_batch: bool = False,
) -> RowCheck:
    """Check the invariants of the shown row (or, right after a batch, of the staged row it
    produced, which must be down to VIEW_LOW)."""
    async with sessions() as session:
        state = (await session.execute(select(MemoryRow).where(MemoryRow.chat_id == chat_id))).scalar_one()
        staged = after_batch and state.staged is not None
        parts = [(int(a), int(b)) for a, b in ((state.staged or []) if staged else state.shown)]
        boundary = int((state.staged_boundary or 0) if staged else state.boundary)
        records = await fetch(session, chat_id, parts)
    problems = []
    if not is_tiling(parts, boundary):
        problems.append(f"row does not tile [0, {boundary})")
    missing = [p for p in parts if p not in records]
    if missing:
        problems.append(f"{len(missing)} row parts are not built")
    size = sum(row_line_bytes(records[p].info(), "UTC") for p in parts if p in records)
    if size > config.view_high:
        problems.append(f"row is {size} bytes, over VIEW_HIGH {config.view_high}")
    if after_batch and size > config.view_low and mergeable_pairs(parts):
        problems.append(f"row is {size} bytes after its batch, over VIEW_LOW {config.view_low}")
    async with sessions() as session:
        oversize = (
            await session.execute(
                select(TreeNode.level, TreeNode.idx, TreeNode.bytes, TreeNode.tries, TreeNode.by_model).where(
                    TreeNode.chat_id == chat_id, TreeNode.bytes > config.node_bytes
                )
            )
        ).all()
    for level, idx, nbytes, node_tries, by_model in oversize:
        if not by_model or node_tries < config.tries:
            problems.append(f"node ({level},{idx}) is {nbytes} bytes after {node_tries} tries")
    return RowCheck(size, problems)


async def tail_bytes(sessions: async_sessionmaker[AsyncSession], chat_id: int) -> int:
    """Bytes of the raw tail: the messages past the shown row's boundary."""
    async with sessions() as session:
        boundary = await session.scalar(select(MemoryRow.boundary).where(MemoryRow.chat_id == chat_id))
        return await range_bytes(session, chat_id, int(boundary or 0))


async def settled(
    sessions: async_sessionmaker[AsyncSession], chat_id: int, config: MemoryConfig
) -> tuple[bool, float]:
    """Whether the compactor has nothing left to do (no staged row, no repair, a tail within
    TAIL_START), and the share of the chat's nodes made without the model."""
    async with sessions() as session:
        state = (await session.execute(select(MemoryRow).where(MemoryRow.chat_id == chat_id))).scalar_one()
        converged = (
            state.staged is None
            and not state.needs_repair
            and (await range_bytes(session, chat_id, state.boundary) <= config.tail_start)
        )
        built = (
            await session.execute(
                select(func.count(), func.count().filter(TreeNode.by_model.is_(False))).where(
                    TreeNode.chat_id == chat_id
                )
            )
        ).one()
    return converged, round(built[1] / max(built[0], 1), 4)


async def shown_row_lines(sessions: async_sessionmaker[AsyncSession], chat_id: int) -> list[str]:
    """The shown row's lines read straight from the tree, without the prompt's VIEW_HIGH
    ceiling (what the row would cost if nothing bounded it)."""
    async with sessions() as session:
        state = await session.scalar(select(MemoryRow).where(MemoryRow.chat_id == chat_id))
        assert state is not None
        return await row_lines(session, chat_id, [(int(a), int(b)) for a, b in state.shown], "UTC")
