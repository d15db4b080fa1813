"""Tree math for the summary tree: node addressing and free (model-less) nodes.

Pure functions only: no database, no I/O. docs/design.md section 5.

A node ``(l, i)`` covers messages ``[i * 2**l, (i + 1) * 2**l)``. Level 0 is one message;
a parent is built only from its two children, never from the raw messages. The model and
the people see a node as its address ``id+n`` (first message, message count), so
``(3, 5)`` is ``40+8`` and the model opens it with ``zoom(40, 8)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from memory.text.names import speaker

Node = tuple[int, int]
"""``(level, index)``: covers messages ``[index * 2**level, (index + 1) * 2**level)``."""


class AddressError(ValueError):
    """A line address (``id+n``) is malformed or names no node of this chat.

    The message is shown to the model and to people (``zoom``, ``/memory node``), so it
    says what is wrong and what a valid address looks like.
    """


# 18 digits (~10**18, inside Postgres bigint) is far beyond any chat; the cap keeps a
# hostile or confused caller from making int() chew through thousands of digits.
_ADDRESS = re.compile(r"([0-9]{1,18})\+([0-9]{1,18})")


def start(node: Node) -> int:
    """First message the node covers."""
    level, index = node
    return index << level


def size(node: Node) -> int:
    """Number of messages the node covers: ``2**level``."""
    return 1 << node[0]


def end(node: Node) -> int:
    """One past the last message the node covers (exclusive end)."""
    level, index = node
    return (index + 1) << level


def nodes_of(pairs: Iterable[Sequence[int]] | None) -> list[Node]:
    """Nodes from their stored form, ``[[level, index], ...]`` (a memory row's shown and staged
    parts). Through C (map), not a comprehension per pair: after an import a staged row holds
    every imported leaf (103,683 for #ubuntu) and is read at every pass."""
    return list(map(tuple, pairs or ()))  # type: ignore[arg-type]  # each pair is [level, index]


def address(node: Node) -> str:
    """The ``id+n`` form the model reads and passes back to ``zoom``."""
    return f"{start(node)}+{size(node)}"


def parse_address(text: str) -> tuple[int, int]:
    """Parse ``"id+n"`` into ``(id, n)``; only the syntax is checked here.

    Whether the pair names a real node of a chat is :func:`node_for`'s job, because it
    needs the chat's message count.
    """
    match = _ADDRESS.fullmatch(text.strip())
    if match is None:
        raise AddressError(
            f"{text[:40]!r} is not a line address: expected id+n with two whole numbers, like 40+8"
        )
    return int(match.group(1)), int(match.group(2))


def node_for(first: int, count: int, total: int) -> Node:
    """The node whose address is ``first+count`` in a chat of ``total`` messages.

    Each rule gets its own message so the model can correct exactly one thing on retry.
    """
    label = f"{first}+{count}"
    if first < 0:
        raise AddressError(f"{label}: the first message id cannot be negative")
    if count < 1 or count & (count - 1):
        raise AddressError(f"{label}: the message count must be a power of two (1, 2, 4, 8, ...)")
    if first % count:
        raise AddressError(
            f"{label}: the first message of a {count}-message line must be a multiple of {count}"
        )
    if first + count > total:
        if total == 0:
            raise AddressError(f"{label}: this chat has no messages yet")
        raise AddressError(f"{label}: this chat has only {total} messages (ids 0..{total - 1})")
    level = count.bit_length() - 1
    return level, first >> level


def parse_node(text: str, total: int) -> Node:
    """:func:`parse_address` then :func:`node_for`: the whole check for one address."""
    first, count = parse_address(text)
    return node_for(first, count, total)


def children(node: Node) -> tuple[Node, Node]:
    """The two halves of a node, older first. A single message has none."""
    level, index = node
    if level <= 0:
        raise ValueError(f"{address(node)} is a single message; it has no children")
    return (level - 1, 2 * index), (level - 1, 2 * index + 1)


def parent(node: Node) -> Node:
    """The node one level up that contains this one (built from it and its sibling)."""
    level, index = node
    return level + 1, index >> 1


def sibling(node: Node) -> Node:
    """The other half of this node's parent."""
    level, index = node
    return level, index ^ 1


def covering(message: int, max_level: int) -> list[Node]:
    """The nodes at levels 1..max_level that contain ``message``, lowest first.

    These are exactly the summaries an edit or erasure of that message invalidates
    (level 0 is the message itself and is handled by the log).
    """
    if message < 0:
        raise ValueError(f"message id {message} is negative")
    return [(level, message >> level) for level in range(1, max_level + 1)]


def descendants_at(node: Node, level: int) -> range:
    """Indexes of the level-``level`` nodes under ``node``, oldest first.

    A range rather than a list: a high node has 2**level leaves and callers usually only
    need the bounds (for a SQL ``BETWEEN``) or to iterate lazily.
    """
    node_level, index = node
    if not 0 <= level <= node_level:
        raise ValueError(f"level {level} is not between 0 and {address(node)}'s level {node_level}")
    shift = node_level - level
    return range(index << shift, (index + 1) << shift)


def utf8_len(text: str) -> int:
    """Size in UTF-8 bytes: every budget in the design (512 B nodes, 96 KB row) is bytes."""
    return len(text.encode("utf-8"))


def free_leaf(author: str | None, text: str | None, node_bytes: int) -> str | None:
    """The level-0 line when the message fits whole, else None (the model must compress it).

    An erased message has neither author nor text and becomes the empty line, which is
    free and contributes nothing to its parent. Erasure clears both, so a text without an
    author is a bug upstream and is refused rather than shown unattributed.
    """
    if author is None:
        if text:
            raise ValueError("a message with text must have an author; erasure clears both")
        return ""
    line = f"{speaker(author)}: {text}" if text else f"{speaker(author)}:"
    return line if utf8_len(line) <= node_bytes else None


def free_merge(left: str, right: str, node_bytes: int) -> str | None:
    """The parent line when both children fit together verbatim, else None.

    Empty children (erased stretches) add nothing, so ``free_merge("", x) == x``: erasing
    a message never costs a model call for the lines above it unless the rest overflows.
    """
    line = "\n".join(part for part in (left, right) if part)
    return line if utf8_len(line) <= node_bytes else None
