"""The built nodes of one chat that this process has seen, shared by the planner's passes and
the compactor's calls: a plan reads the row's parts and their parents again and again, and
most of them have not changed since the last pass.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.ext.asyncio import AsyncSession

from memory.storage.tree_nodes import NodeRecord, fetch
from memory.tree.node import Node
from memory.tree.render import row_line_bytes


class NodeCache:
    """Built nodes of one chat seen by this process. Nodes are immutable until an erasure,
    which bumps the row version; the cache is dropped on any version change."""

    def __init__(self, chat_id: int, tz: str) -> None:
        self.chat_id, self.tz, self.version = chat_id, tz, -1
        self.records: dict[Node, NodeRecord] = {}
        self.unbuilt: set[Node] = set()
        self._bytes: dict[Node, int] = {}

    def reset(self, version: int) -> None:
        if version != self.version:
            self.version = version
            self.records.clear()
            self._bytes.clear()
        self.unbuilt.clear()

    async def load(self, session: AsyncSession, nodes: Iterable[Node]) -> None:
        wanted = {n for n in nodes if n not in self.records and n not in self.unbuilt}
        if not wanted:
            return
        found = await fetch(session, self.chat_id, wanted)
        self.records.update(found)
        self.unbuilt.update(wanted - found.keys())

    def add(self, record: NodeRecord) -> None:
        self.records[record.node] = record
        self.unbuilt.discard(record.node)

    def get(self, node: Node) -> NodeRecord | None:
        return self.records.get(node)

    def line_bytes(self, node: Node) -> int | None:
        record = self.records.get(node)
        if record is None:
            return None
        size = self._bytes.get(node)
        if size is None:
            size = self._bytes[node] = row_line_bytes(record.info(), self.tz)
        return size
