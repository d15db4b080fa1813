"""Tree math and free nodes (memory/tree/node.py), against brute-force references."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.tree.node import (
    AddressError,
    Node,
    address,
    children,
    covering,
    descendants_at,
    end,
    free_leaf,
    free_merge,
    node_for,
    parent,
    parse_address,
    parse_node,
    sibling,
    size,
    start,
    utf8_len,
)

nodes = st.tuples(st.integers(0, 32), st.integers(0, 2**24))
small_nodes = st.tuples(st.integers(0, 9), st.integers(0, 2**12))


# --- addressing ---------------------------------------------------------------------------


def test_node_3_5_is_40_plus_8() -> None:
    assert (start((3, 5)), size((3, 5)), end((3, 5))) == (40, 8, 48)
    assert address((3, 5)) == "40+8"
    assert address((0, 7)) == "7+1"


@given(nodes)
def test_address_round_trips(node: Node) -> None:
    first, count = parse_address(address(node))
    assert (first, count) == (start(node), size(node))
    assert node_for(first, count, end(node)) == node
    assert parse_node(f"  {address(node)}\n", end(node)) == node


@pytest.mark.parametrize(
    "text", ["abc", "-1+1", "", "+", "1+", "+1", "1+1+1", "1 + 1", "1-1", "４+1", "1+1x", "9" * 19 + "+1"]
)
def test_parse_address_rejects_malformed_text(text: str) -> None:
    with pytest.raises(AddressError, match="not a line address"):
        parse_address(text)


@pytest.mark.parametrize(
    ("text", "total", "message"),
    [
        ("3+2", 100, "3\\+2: the first message of a 2-message line must be a multiple of 2"),
        ("999999+1", 10, "999999\\+1: this chat has only 10 messages \\(ids 0..9\\)"),
        ("0+3", 100, "0\\+3: the message count must be a power of two"),
        ("1+0", 100, "1\\+0: the message count must be a power of two"),
        ("0+1", 0, "0\\+1: this chat has no messages yet"),
        ("40+8", 47, "only 47 messages"),
    ],
)
def test_node_for_explains_each_invalid_address(text: str, total: int, message: str) -> None:
    with pytest.raises(AddressError, match=message):
        parse_node(text, total)


def test_node_for_rejects_negative_first_message() -> None:
    with pytest.raises(AddressError, match="cannot be negative"):
        node_for(-2, 2, 10)


def test_address_error_is_a_value_error() -> None:
    # Callers that only know "bad input" (tool dispatch) catch ValueError.
    assert issubclass(AddressError, ValueError)


@given(st.integers(-4, 80), st.integers(-1, 70), st.integers(0, 80))
def test_node_for_accepts_exactly_the_valid_addresses(first: int, count: int, total: int) -> None:
    # Brute force: a valid address is the span of some node that lies inside [0, total).
    spans = {(start(n), size(n)) for n in ((lv, i) for lv in range(8) for i in range(81))}
    valid = (first, count) in spans and first + count <= total
    if valid:
        node = node_for(first, count, total)
        assert (start(node), size(node)) == (first, count)
    else:
        with pytest.raises(AddressError):
            node_for(first, count, total)


# --- structure ----------------------------------------------------------------------------


def test_a_single_message_has_no_children() -> None:
    with pytest.raises(ValueError, match="7\\+1 is a single message"):
        children((0, 7))


@given(nodes.filter(lambda n: n[0] > 0))
def test_children_split_the_span_in_two_and_know_their_parent(node: Node) -> None:
    left, right = children(node)
    assert (start(left), end(left), start(right), end(right)) == (
        start(node),
        start(node) + size(node) // 2,
        start(node) + size(node) // 2,
        end(node),
    )
    assert parent(left) == parent(right) == node
    assert sibling(left) == right and sibling(right) == left


@given(small_nodes)
def test_descending_reaches_every_message_once_in_level_steps(node: Node) -> None:
    # Walk every path down through children(); record the leaf and the path length.
    reached: dict[int, int] = {}
    stack = [(node, 0)]
    while stack:
        current, steps = stack.pop()
        if current[0] == 0:
            assert current[1] not in reached, "two paths reach the same message"
            reached[current[1]] = steps
            continue
        stack.extend((child, steps + 1) for child in children(current))
    assert sorted(reached) == list(range(start(node), end(node)))
    assert set(reached.values()) == {node[0]}


@given(small_nodes, st.data())
def test_descendants_at_matches_repeated_children(node: Node, data: st.DataObject) -> None:
    level = data.draw(st.integers(0, node[0]))
    frontier = [node]
    while frontier[0][0] > level:
        frontier = [child for n in frontier for child in children(n)]
    assert [(level, i) for i in descendants_at(node, level)] == frontier


def test_descendants_at_rejects_levels_outside_the_node() -> None:
    with pytest.raises(ValueError, match="not between"):
        descendants_at((2, 1), 3)
    with pytest.raises(ValueError, match="not between"):
        descendants_at((2, 1), -1)


@given(st.integers(0, 5000), st.integers(0, 14))
def test_covering_lists_exactly_the_nodes_above_a_message(message: int, max_level: int) -> None:
    brute = [
        (lv, i)
        for lv in range(1, max_level + 1)
        for i in range(message // 2**lv + 2)
        if start((lv, i)) <= message < end((lv, i))
    ]
    assert covering(message, max_level) == brute


# --- free nodes ---------------------------------------------------------------------------


def test_utf8_len_counts_bytes_not_characters() -> None:
    assert utf8_len("abc") == 3
    assert utf8_len("é") == 2
    assert utf8_len("🙂") == 4


def test_free_leaf_keeps_a_message_that_fits_verbatim() -> None:
    assert free_leaf("Pia", "see you at 8", 512) == "Pia: see you at 8"


def test_free_leaf_boundary_is_in_utf8_bytes() -> None:
    text = "é" * 253  # "Pia: " is 5 bytes, 253 x 2 = 506, total 511
    assert free_leaf("Pia", text, 511) == f"Pia: {text}"
    assert free_leaf("Pia", text, 510) is None
    assert free_leaf("Pia", text + "é", 512) is None  # 513 bytes, though only 259 characters


def test_free_leaf_of_an_erased_message_is_the_empty_line() -> None:
    assert free_leaf(None, None, 512) == ""
    assert free_leaf(None, "", 512) == ""


def test_free_leaf_refuses_text_without_an_author() -> None:
    with pytest.raises(ValueError, match="must have an author"):
        free_leaf(None, "orphan text", 512)


def test_free_leaf_with_empty_text_shows_the_author_only() -> None:
    assert free_leaf("Pia", "", 512) == "Pia:"


def test_free_merge_joins_children_with_a_newline() -> None:
    assert free_merge("Pia: hi", "Max: hey", 512) == "Pia: hi\nMax: hey"
    assert free_merge("a" * 5, "b" * 6, 12) == "aaaaa\nbbbbbb"
    assert free_merge("a" * 5, "b" * 6, 11) is None


def test_free_merge_ignores_empty_children() -> None:
    assert free_merge("", "Max: hey", 512) == "Max: hey"
    assert free_merge("Max: hey", "", 512) == "Max: hey"
    assert free_merge("", "", 512) == ""
    # An empty child costs no separator byte: 8 bytes fit in 8.
    assert free_merge("", "Max: hey", 8) == "Max: hey"


@given(st.text(max_size=40), st.text(max_size=40), st.integers(0, 200))
def test_free_merge_fits_or_declines(left: str, right: str, node_bytes: int) -> None:
    merged = free_merge(left, right, node_bytes)
    expected = "\n".join(x for x in (left, right) if x)
    if len(expected.encode()) <= node_bytes:
        assert merged == expected
    else:
        assert merged is None
