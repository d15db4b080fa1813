"""The million-message chat of bench/scale_measure.py, built without a model: the messages (a corpus
repeated with fresh snowflakes and dates) and a pure simulation of the compactor on them (see
its module docstring, steps 1 and 2)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from memory import ImportedMessage, NewMessage, tail_line_bytes
from memory.config import MemoryConfig
from memory.fakes.size_model import fake_compress_line, fake_merge_line, node_seed
from memory.text.records import message_text
from memory.tree.node import Node, children, end, free_leaf, free_merge, start
from memory.tree.render import LineInfo, row_line_bytes
from memory.tree.row import plan_batch

ERASED_PERSON = ("forget-me-person", 424_242)
SNOWFLAKE_BASE = 10**15


def generate(
    records: Sequence[ImportedMessage], count: int, erase: int, first: int = 0
) -> Iterator[NewMessage]:
    """Messages ``first .. first+count-1`` of the corpus repeated; every ``step``-th of the
    first ``erase * step`` messages belongs to the person the benchmark erases."""
    span = records[-1].created_at - records[0].created_at + timedelta(days=1)
    step = max(1, (first + count) // max(erase, 1)) if erase else 0
    for k in range(first, first + count):
        rec = records[k % len(records)]
        name, author_id = rec.author_name, zlib.crc32(rec.author_name.encode()) + 1
        if step and k % step == step - 1 and k // step < erase:
            name, author_id = ERASED_PERSON
        yield NewMessage(
            author_name=name,
            created_at=rec.created_at + span * (k // len(records)),
            content=rec.content,
            author_id=author_id,
            snowflake=SNOWFLAKE_BASE + k,
            is_bot=rec.is_bot,
        )


class TreeSimulation:
    """The compactor's arms, batches and swaps on a message stream, without a model."""

    def __init__(self, config: MemoryConfig) -> None:
        self.cfg = config
        self.authors: list[str] = []
        self.texts: list[str] = []
        self.times: list[datetime] = []
        self.line_bytes: list[int] = []
        self.lines: dict[Node, str] = {}
        self.by_model: set[Node] = set()
        self._row_bytes: dict[Node, int] = {}
        self.row: list[Node] = []
        self.boundary = 0
        self.tail = 0

    def add(self, msg: NewMessage) -> None:
        index = len(self.texts)
        body = message_text(msg.content, msg.attachments)
        self.authors.append(msg.author_name)
        self.texts.append(body)
        self.times.append(msg.created_at)
        size = tail_line_bytes(index, msg.author_name, body)
        self.line_bytes.append(size)
        self.tail += size
        if self.tail > self.cfg.tail_start:
            self._arm(index + 1)

    def line(self, node: Node) -> str:
        found = self.lines.get(node)
        if found is not None:
            return found
        if node[0] == 0:
            i = node[1]
            made = free_leaf(self.authors[i], self.texts[i], self.cfg.node_bytes)
            if made is None:
                made = fake_compress_line(
                    self.authors[i], self.texts[i], node_seed(0, i), self.cfg.node_bytes
                )
                self.by_model.add(node)
        else:
            left, right = (self.line(child) for child in children(node))
            made = free_merge(left, right, self.cfg.node_bytes)
            if made is None:
                made = fake_merge_line(left, right, node_seed(*node), self.cfg.node_bytes)
                self.by_model.add(node)
        self.lines[node] = made
        return made

    def size(self, node: Node) -> int:
        found = self._row_bytes.get(node)
        if found is None:
            info = LineInfo(node, self.line(node), self.times[start(node)], self.times[end(node) - 1])
            found = self._row_bytes[node] = row_line_bytes(info, self.cfg.timezone)
        return found

    def _arm(self, total: int) -> None:
        keep, kept = total - 1, self.line_bytes[total - 1]
        while keep > self.boundary and kept + self.line_bytes[keep - 1] <= self.cfg.tail_keep:
            keep -= 1
            kept += self.line_bytes[keep]
        if keep <= self.boundary:
            return
        staged = self.row + [(0, i) for i in range(self.boundary, keep)]
        if sum(self.size(p) for p in staged) > self.cfg.view_high:
            staged = plan_batch(staged, total, self.size, self.cfg.view_low).parts
        self.row, self.boundary = staged, keep
        self.tail = sum(self.line_bytes[keep:total])

    def node_records(self, chat_id: int) -> Iterator[tuple[Any, ...]]:
        for node, line in self.lines.items():
            model = node in self.by_model
            yield (
                chat_id,
                node[0],
                node[1],
                line,
                len(line.encode()),
                self.times[start(node)],
                self.times[end(node) - 1],
                model,
                "fake" if model else None,
                1 if model else 0,
            )
