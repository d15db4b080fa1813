"""The planner's lines before a task, found by a binary search on the row's coverage
(RowContext), against the walk from the row's first line that it replaced (docs/benchmarks.md): the
same lines for every node, whatever is built, erased or out of the row."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.compaction.node_cache import NodeCache
from memory.compaction.planner import PlannedTask
from memory.compaction.summarizer import CompactTask
from memory.storage.tree_nodes import NodeRecord
from memory.tree.node import Node, end, start
from memory.tree.render import bare_text


def walk_before(row: list[Node], cache: NodeCache, node: Node) -> tuple[str, ...]:
    """The reference: every built line of the row wholly before ``node``'s first message,
    oldest first, up to the first unbuilt line."""
    lines = []
    for part in row:
        if end(part) > start(node):
            break
        record = cache.get(part)
        if record is None:
            break
        if record.text:
            lines.append(bare_text(record.text))
    return tuple(lines)


@st.composite
def rows(draw: st.DrawFn) -> tuple[list[Node], NodeCache]:
    """A row tiling [0, n) with nodes of random levels, some unbuilt, some erased (empty), some
    with text spread over lines (the context shows each on one line)."""
    row: list[Node] = []
    position = 0
    for _ in range(draw(st.integers(0, 40))):
        level = draw(st.integers(0, 4))
        while position % (1 << level):
            level -= 1
        row.append((level, position >> level))
        position += 1 << level
    cache = NodeCache(chat_id=1, tz="UTC")
    for part in row:
        kind = draw(st.sampled_from(["built", "built", "built", "erased", "unbuilt"]))
        if kind != "unbuilt":
            text = "" if kind == "erased" else draw(st.sampled_from(["a", "b\nc", "  d  ", "é ok"]))
            cache.add(NodeRecord(part, text, None, None))
    return row, cache


@settings(max_examples=300, deadline=None)
@given(rows(), st.data())
def test_the_search_finds_the_lines_the_walk_finds(
    case: tuple[list[Node], NodeCache], data: st.DataObject
) -> None:
    row, cache = case
    last = end(row[-1]) if row else 1
    for round_ in range(3):
        # The same list, then an equal copy: the kept context is used, grown past what was
        # built since; it must say what a walk of the row says now.
        context = cache.context_of(row if round_ != 1 else list(row))
        for _ in range(10):
            level = data.draw(st.integers(0, 5))
            index = data.draw(st.integers(0, max(0, (last + 3) >> level)))
            node = (level, index)
            lines, size = context.before(node)
            assert lines == walk_before(row, cache, node)
            assert size == sum(len(line.encode()) + 1 for line in lines)
        for part in row:
            if cache.get(part) is None and data.draw(st.booleans()):
                cache.add(NodeRecord(part, data.draw(st.sampled_from(["", "late", "x\ny"])), None, None))
    assert len(cache.contexts) == 1  # one row, one context kept


def test_a_context_is_not_kept_across_a_version_or_for_another_row() -> None:
    cache = NodeCache(chat_id=1, tz="UTC")
    row = [(1, 0), (0, 2)]
    for part in row:
        cache.add(NodeRecord(part, f"line {part}", None, None))
    assert cache.context_of(row).before((0, 3)) == (("line (1, 0)", "line (0, 2)"), 24)
    assert cache.context_of([(1, 0)]).before((0, 3)) == (("line (1, 0)",), 12)
    cache.reset(version=5)  # an erasure: nodes may be gone
    assert cache.context_of(row).before((0, 3)) == ((), 0)


def test_a_task_knows_its_bytes_before_whether_or_not_it_is_told() -> None:
    task = CompactTask("compress", 0, 3, author="a", text="x")
    assert PlannedTask((0, 3), task, ("é", "ab"), None, None).before_bytes == 3 + 3
    assert PlannedTask((0, 3), task, ("é", "ab"), None, None, 6).before_bytes == 6
