"""The chat's memory row for one plan, its staged parts kept from the pass that wrote them.

After an import the staged row holds every imported leaf (#ubuntu: 103,683 parts, ~1.2 MB of
JSONB), and a pass reads and writes it whole: decoding it (JSON, then tuples) and encoding it
back cost ~0.2 s a pass on 100,000 messages, row x passes (docs/benchmarks.md, compaction
speed). So the pass that writes the row keeps the parts it left, with the row's ``xmin``: the
id of the transaction that wrote that version of the row. The next pass trusts them only while
the row's ``xmin`` is still that id. Any other writer (another compactor, an erasure, an edit,
this process after a restart) writes a row version with its own ``xmin``, so the parts are
read again; a pass that rolled back never leaves its ``xmin`` on the row; and transaction ids
are not reused (Postgres freezes old rows before the counter wraps, keeping their ``xmin``).
"""

from __future__ import annotations

from sqlalchemy import ColumnClause, literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from memory.compaction.node_cache import NodeCache
from memory.storage.models import MemoryRow
from memory.tree.node import Node, nodes_of

# xid has no ordering or cast to a number in SQL; its text is enough to compare.
_XMIN: ColumnClause[str] = literal_column("memory_rows.xmin::text")


async def lock_row(session: AsyncSession, cache: NodeCache) -> tuple[MemoryRow, list[Node] | None]:
    """The chat's memory row, locked for this transaction, without its staged parts (they are
    deferred: read them here, never from the row object), and those parts: kept ones while the
    row is the version this process wrote, else read."""
    where = MemoryRow.chat_id == cache.chat_id
    query = select(MemoryRow, _XMIN, MemoryRow.staged.is_not(None)).options(defer(MemoryRow.staged))
    state, xmin, has_staged = (await session.execute(query.where(where).with_for_update(of=MemoryRow))).one()
    if not has_staged:
        return state, None
    if cache.staged is not None and cache.staged[0] == xmin and cache.staged[1] is not None:
        return state, cache.staged[1]
    return state, nodes_of(await session.scalar(select(MemoryRow.staged).where(where)))


def write_staged(state: MemoryRow, parts: list[Node] | None) -> None:
    """Store the staged parts in the row (JSON arrays; SQL NULL for none)."""
    # Tuples are written as JSON arrays, [[level, index], ...], like lists (json encodes them
    # in C); the column's type says lists because that is what it reads back.
    state.staged = None if parts is None else parts  # type: ignore[assignment]


async def keep_staged(session: AsyncSession, cache: NodeCache, parts: list[Node] | None) -> None:
    """Write the row now and keep ``parts`` with the ``xmin`` of the version just written (this
    transaction's id: the row is always written, at least its ``updated_at``)."""
    await session.flush()
    xmin = await session.scalar(select(_XMIN).where(MemoryRow.chat_id == cache.chat_id))
    cache.staged = (str(xmin), parts)
