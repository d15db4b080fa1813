"""Erased messages next to each other show as one "(erased)" line in the row (one per gap), so
an erasure does not flood the row with placeholders; everything else is shown as before."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.tree.render import ErasedRun
from tests.memory.helpers import fill, make_engine, message, new_chat, settle

Sessions = async_sessionmaker[AsyncSession]


def test_a_run_of_one_is_the_line_its_node_shows() -> None:
    day = datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert ErasedRun(7, 8, day, day).line("UTC") == "7+1 2026-03-01|(erased)"
    assert ErasedRun(10, 20, day, day.replace(day=3)).line("UTC") == "10+10 2026-03-01..2026-03-03|(erased)"


async def test_consecutive_erased_messages_show_as_one_line_per_gap(sessions: Sessions) -> None:
    engine, _, clock = make_engine(sessions)
    chat = await new_chat(engine)
    await fill(engine, clock, chat, [message(k) for k in range(40)])
    await settle(engine, clock, chat)
    before = (await engine.prompt_view(chat)).row_lines
    erased = [3, *range(10, 20)]  # the settled row covers messages 0 to 19 here
    report = await engine.erase_messages(chat, [10_000 + k for k in erased])
    assert report.messages == 11
    lines = (await engine.prompt_view(chat)).row_lines
    placeholders = [line for line in lines if line.endswith("|(erased)")]
    assert placeholders == ["3+1 2026-03-01|(erased)", "10+10 2026-03-01|(erased)"]
    # Every other line is a line of the settled row or one under it: each message covered once.
    covered = []
    for line in lines:
        first, count = (int(n) for n in line.split(" ", 1)[0].split("+"))
        covered += range(first, first + count)
    assert covered == list(range(len(covered))) and covered[-1] >= 19
    assert len(lines) < len(before) + len(erased)  # not one line per erased message
