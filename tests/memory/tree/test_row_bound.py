"""The row stays bounded after an erasure (docs/design.md, the memory row): where the parts
under deleted lines would take the shown row past VIEW_HIGH, the costliest gaps show one
"being rebuilt" line each, until the compactor rebuilds them.

The choice is a pure function, checked against a brute force over every subset of gaps; then
on a real compacted chat, an author who wrote one message in eight is erased."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.reading.view import row_lines
from memory.storage.models import MemoryRow
from memory.tree.render import rebuilding_line
from memory.tree.row import is_tiling
from memory.tree.row_bound import PartCost, gaps_to_collapse
from tests.memory.helpers import SMALL, make_engine, message, new_chat, settle

Sessions = async_sessionmaker[AsyncSession]
REBUILDING = "|(being rebuilt; zoom or recall to read it)"


def shown_bytes(parts: list[PartCost], collapsed: set[int]) -> int:
    return sum(
        p.placeholder if k in collapsed and p.placeholder is not None else p.expanded
        for k, p in enumerate(parts)
    )


def test_the_placeholder_line_names_the_part_and_its_dates() -> None:
    first, last = datetime(2026, 3, 1, 23, 0, tzinfo=UTC), datetime(2026, 3, 4, 1, 0, tzinfo=UTC)
    # Node (3, 5) covers messages 40..47: written 40+8 (docs/design.md, the tree).
    assert rebuilding_line((3, 5), first, last, "UTC") == f"40+8 2026-03-01..2026-03-04{REBUILDING}"
    assert rebuilding_line((3, 5), first, last, "Asia/Tokyo") == f"40+8 2026-03-02..2026-03-04{REBUILDING}"
    assert rebuilding_line((0, 7), None, None, "UTC") == f"7+1 ?{REBUILDING}"


def test_a_row_that_fits_shows_everything() -> None:
    parts = [PartCost(900), PartCost(3000, 60), PartCost(500, 60)]
    assert gaps_to_collapse(parts, 4400) == set()
    assert gaps_to_collapse(parts, 4399) == {1}  # the one that saves most: 2,940 bytes


costs = st.lists(
    st.one_of(
        st.builds(PartCost, st.integers(1, 600)),  # a built part
        st.builds(PartCost, st.integers(1, 5000), st.integers(40, 90)),  # a gap
    ),
    max_size=9,
)


@given(costs, st.integers(0, 20_000))
def test_the_fewest_placeholders_that_make_the_row_fit(parts: list[PartCost], limit: int) -> None:
    collapsed = gaps_to_collapse(parts, limit)
    gaps = [k for k, p in enumerate(parts) if p.placeholder is not None]
    assert collapsed <= set(gaps)
    fitting = [
        set(subset)
        for size in range(len(gaps) + 1)
        for subset in itertools.combinations(gaps, size)
        if shown_bytes(parts, set(subset)) <= limit
    ]
    if fitting:
        assert shown_bytes(parts, collapsed) <= limit
        assert len(collapsed) == min(len(s) for s in fitting)
    else:  # even all placeholders are too big: every gap that saves bytes is collapsed
        assert shown_bytes(parts, collapsed) == min(
            shown_bytes(parts, set(s)) for n in range(len(gaps) + 1) for s in itertools.combinations(gaps, n)
        )


RARE = "Rare"
RARE_ID = 918273645547


async def test_erasing_one_author_in_eight_keeps_the_row_under_view_high(sessions: Sessions) -> None:
    engine, _summarizer, clock = make_engine(sessions)
    chat = await new_chat(engine)
    msgs = [
        replace(message(k), author_name=RARE, author_id=RARE_ID) if k % 8 == 3 else message(k)
        for k in range(640)
    ]
    await engine.append_many(chat, msgs)
    clock.set(msgs[-1].created_at)
    await settle(engine, clock, chat)
    before = (await engine.prompt_view(chat)).memory_text()
    assert REBUILDING not in before and len(before.encode()) <= SMALL.view_high

    report = await engine.erase_author(77, RARE_ID)
    assert report.messages == 80

    async with sessions() as s:
        state = await s.get(MemoryRow, chat)
        assert state is not None and state.needs_repair
        parts = [(int(a), int(b)) for a, b in state.shown]
        assert is_tiling(parts, int(state.boundary))
        unbounded = await row_lines(s, chat, parts, "UTC")
    assert sum(len(x.encode()) + 1 for x in unbounded) > 2 * SMALL.view_high, (
        "the erasure really blew the row up"
    )

    view = await engine.prompt_view(chat)  # right away, before any rebuild
    memory = view.memory_text()
    row_bytes = sum(len(x.encode()) + 1 for x in view.row_lines)
    assert row_bytes <= SMALL.view_high
    assert any(line.endswith(REBUILDING) for line in view.row_lines)
    # Every line still has its real address, in order: the placeholders tile with the rest.
    heads = [line.split(" ", 1)[0] for line in view.row_lines]
    firsts = [int(h.split("+")[0]) for h in heads]
    counts = [int(h.split("+")[1]) for h in heads]
    assert firsts[0] == 0 and all(a + n == b for a, n, b in zip(firsts, counts, firsts[1:], strict=False))
    assert firsts[-1] + counts[-1] == view.boundary
    assert RARE not in memory

    await engine.compact(chat, until_idle=True, force_swap=True)
    rebuilt = await engine.prompt_view(chat)
    assert not any(line.endswith(REBUILDING) for line in rebuilt.row_lines)
    assert sum(len(x.encode()) + 1 for x in rebuilt.row_lines) <= SMALL.view_high


async def test_the_biggest_importable_messages_keep_the_tail_under_its_cap(sessions: Sessions) -> None:
    """The raw tail always shows its newest message whole, so the cap holds only if no single
    message outgrows it: an import's ceiling (16,000 characters, 4 bytes each at most) must."""
    from memory.config import MemoryConfig
    from memory.imports.readers import MAX_MESSAGE_CHARS
    from memory.storage.log import NewMessage

    config = MemoryConfig()
    engine, _summarizer, _clock = make_engine(sessions, config)
    chat = await new_chat(engine)
    widest = "\U0001f3be" * MAX_MESSAGE_CHARS  # 4 UTF-8 bytes per character
    at = datetime(2026, 3, 1, tzinfo=UTC)
    await engine.append_many(
        chat, [NewMessage("pia", at, widest, author_id=1, snowflake=k) for k in range(4)]
    )
    view = await engine.prompt_view(chat)
    tail = view.tail_text().encode()
    assert len(widest.encode()) == 64_000 and len(tail) <= config.tail_cap
    assert view.dropped_from == 0 and view.tail_lines[-1].startswith("#3 ")  # the newest is whole
