"""Reading and writing tree nodes. Built nodes are never edited: erasure deletes them and
the compactor builds them again (docs/design.md section 5)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, delete, select, text, tuple_
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.storage.models import TreeNode
from memory.tree.node import Node, children, utf8_len
from memory.tree.render import LineInfo


@dataclass(frozen=True, slots=True)
class NodeRecord:
    node: Node
    text: str
    first_at: datetime | None
    last_at: datetime | None
    by_model: bool = False

    def info(self) -> LineInfo:
        return LineInfo(self.node, self.text, self.first_at, self.last_at)


@dataclass(slots=True)
class NodeWrite:
    node: Node
    text: str
    first_at: datetime | None
    last_at: datetime | None
    by_model: bool
    model: str | None = None
    tries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0


# One round trip for any set of nodes: a join of the wanted (level, idx) pairs on the primary
# key. One query per level cost a reply prompt ~10-15 round trips on a deep row (prompt_view
# p95 52 -> 34 ms on a 100K-message chat, docs/benchmarks.md).
_FETCH = text("""
    SELECT n.level, n.idx, n.text, n.first_at, n.last_at, n.by_model
    FROM unnest(CAST(:levels AS smallint[]), CAST(:idxs AS bigint[])) AS w(level, idx)
    JOIN nodes n ON n.chat_id = :chat_id AND n.level = w.level AND n.idx = w.idx
""")


async def fetch(session: AsyncSession, chat_id: int, nodes: Iterable[Node]) -> dict[Node, NodeRecord]:
    """The built ones among ``nodes`` (one query, by the primary key)."""
    wanted = sorted(set(nodes))
    if not wanted:
        return {}
    rows = await session.execute(
        _FETCH,
        {"chat_id": chat_id, "levels": [level for level, _ in wanted], "idxs": [idx for _, idx in wanted]},
    )
    found: dict[Node, NodeRecord] = {}
    for level, idx, line, first_at, last_at, by_model in rows:
        node = (int(level), int(idx))
        found[node] = NodeRecord(node, line, first_at, last_at, by_model)
    return found


async def insert_nodes(session: AsyncSession, chat_id: int, writes: Iterable[NodeWrite]) -> int:
    """Insert; a node that already exists is left alone (a duplicate build is a no-op). How
    many were inserted."""
    return len(await insert_new_nodes(session, chat_id, writes))


async def insert_new_nodes(session: AsyncSession, chat_id: int, writes: Iterable[NodeWrite]) -> set[Node]:
    """insert_nodes, returning the nodes it inserted (those that did not exist yet)."""
    values = [
        {
            "chat_id": chat_id,
            "level": w.node[0],
            "idx": w.node[1],
            "text": w.text,
            "bytes": utf8_len(w.text),
            "first_at": w.first_at,
            "last_at": w.last_at,
            "by_model": w.by_model,
            "model": w.model,
            "tries": w.tries,
            "input_tokens": w.input_tokens,
            "output_tokens": w.output_tokens,
            "cache_write_tokens": w.cache_write_tokens,
            "cache_read_tokens": w.cache_read_tokens,
        }
        for w in writes
    ]
    if not values:
        return set()
    # executemany with RETURNING: SQLAlchemy batches the rows into multi-row INSERTs
    # ("insertmanyvalues") within asyncpg's bind-parameter limit.
    table = TreeNode.metadata.tables[TreeNode.__tablename__]
    statement = insert(table).on_conflict_do_nothing().returning(table.c.level, table.c.idx)
    result = await session.execute(statement, values)
    return {(int(level), int(idx)) for level, idx in result.all()}


async def delete_covering(session: AsyncSession, chat_id: int, indexes: Iterable[int], max_level: int) -> int:
    """Delete every node, level 0 included, that covers one of the message ``indexes``."""
    wanted = sorted(set(indexes))
    if not wanted:
        return 0
    deleted = 0
    for level in range(max_level + 1):
        ids = sorted({i >> level for i in wanted})
        result = await session.execute(
            delete(TreeNode)
            .where(TreeNode.chat_id == chat_id, TreeNode.level == level, TreeNode.idx.in_(ids))
            .returning(TreeNode.idx)
        )
        deleted += len(result.all())
    return deleted


async def resolve(
    session: AsyncSession, chat_id: int, parts: list[Node], limit: int = 100_000
) -> list[tuple[Node, NodeRecord | None]]:
    """Each part as built lines: a built part as itself, an unbuilt one through its built
    descendants (never as cut text); an unbuilt leaf stays ``(node, None)``.

    Walks down level by level with one query per level; ``limit`` bounds the expansion.
    """
    known = await fetch(session, chat_id, parts)
    out: list[tuple[Node, NodeRecord | None]] = []
    pending = [p for p in parts if p not in known]
    expansion: dict[Node, list[Node]] = {}
    frontier = [p for p in pending if p[0] > 0]
    while frontier and len(known) < limit:
        kids = [k for node in frontier for k in children(node)]
        known.update(await fetch(session, chat_id, kids))
        for node in frontier:
            expansion[node] = list(children(node))
        frontier = [k for k in kids if k not in known and k[0] > 0]

    def emit(node: Node) -> None:
        if node in known:
            out.append((node, known[node]))
        elif node in expansion:
            for kid in expansion[node]:
                emit(kid)
        else:
            out.append((node, None))

    for part in parts:
        emit(part)
    return out


async def exists(session: AsyncSession, chat_id: int, nodes: Iterable[Node]) -> set[Node]:
    pairs = list(nodes)
    if not pairs:
        return set()
    rows = await session.execute(
        select(TreeNode.level, TreeNode.idx).where(
            and_(TreeNode.chat_id == chat_id, tuple_(TreeNode.level, TreeNode.idx).in_(pairs))
        )
    )
    return {(int(level), int(idx)) for level, idx in rows}
