"""What the reply model reads for a chat: the memory row and the raw tail (docs/design.md section 7).

The row is loaded as persisted, never rebuilt from the log. Erased messages next to each other
show as one "(erased)" line (memory.tree.render.ErasedRun). A part an erasure or edit
removed shows through its surviving built descendants until the compactor rebuilds it;
where those would take the row past VIEW_HIGH, one "being rebuilt" line stands in for the
part instead (memory.tree.row_bound).
The raw tail is capped at TAIL_CAP: when the compactor is behind (model down), the oldest
part is left out with a note pointing at `recall`, so a prompt never outgrows the window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.config import MemoryConfig
from memory.storage.chats import get_chat
from memory.storage.log import keep_boundary, read_range
from memory.storage.models import MemoryRow
from memory.storage.people_cards import read_cards
from memory.storage.tree_nodes import resolve
from memory.tree.node import Node, end, start, utf8_len
from memory.tree.render import (
    ErasedRun,
    memory_block,
    people_block,
    people_line,
    placeholder_line,
    rebuilding_line,
    row_line,
    tail_line,
)
from memory.tree.row_bound import PartCost, gaps_to_collapse


@dataclass(slots=True)
class PromptView:
    chat_id: int
    total: int  # T: messages logged
    boundary: int  # B: first message of the raw tail
    timezone: str
    row_lines: list[str] = field(default_factory=list)
    tail_lines: list[str] = field(default_factory=list)
    dropped_from: int | None = None  # first tail message left out by the cap
    dropped_to: int | None = None
    people_lines: list[str] = field(default_factory=list)  # the people cards, shown before the row

    @property
    def dropped_note(self) -> str | None:
        if self.dropped_from is None or self.dropped_to is None:
            return None
        return (
            f"(messages #{self.dropped_from} to #{self.dropped_to - 1} are not summarized yet and do not fit "
            "here; use recall to search them)"
        )

    def people_text(self) -> str:
        return people_block(self.people_lines)

    def memory_text(self) -> str:
        return memory_block(self.row_lines)

    def tail_text(self) -> str:
        lines = ([self.dropped_note] if self.dropped_note else []) + self.tail_lines
        return "\n".join(lines)

    def render(self) -> str:
        """The exact text `eva view` and `/memory view` show."""
        return (
            self.people_text()
            + self.memory_text()
            + "\n"
            + self.tail_text()
            + ("\n" if self.tail_lines else "")
        )


async def row_lines(
    session: AsyncSession, chat_id: int, parts: list[Node], tz: str, limit: int | None = None
) -> list[str]:
    """The row's lines: each part as built lines (its own, or its surviving descendants');
    past ``limit`` bytes, the gaps that cost most show one "being rebuilt" line each. Erased
    messages next to each other, within a part or across parts, show as one line."""
    resolved = await resolve(session, chat_id, parts)
    groups: list[list[str | ErasedRun]] = []
    costs: list[PartCost] = []
    placeholders: list[str | None] = []
    cursor = 0
    for part in parts:
        lines: list[str | ErasedRun] = []
        firsts: list[datetime] = []
        lasts: list[datetime] = []
        built = False
        # resolve() emits each part's lines in order, all inside the part.
        while cursor < len(resolved) and start(resolved[cursor][0]) < end(part):
            node, record = resolved[cursor]
            cursor += 1
            if record is None:
                lines.append(placeholder_line(node, None, tz))
                continue
            built = node == part
            erased = ErasedRun(start(node), end(node), record.first_at, record.last_at)
            lines.append(row_line(record.info(), tz) if record.text else erased)
            firsts += [record.first_at] if record.first_at else []
            lasts += [record.last_at] if record.last_at else []
        gap = None
        if not built:
            gap = rebuilding_line(part, min(firsts, default=None), max(lasts, default=None), tz)
        groups.append(lines)
        placeholders.append(gap)
        # Each erased line counted whole: an upper bound of what the part costs once runs join.
        expanded = sum(utf8_len(line if isinstance(line, str) else line.line(tz)) + 1 for line in lines)
        costs.append(PartCost(expanded, None if gap is None else utf8_len(gap) + 1))
    collapsed = gaps_to_collapse(costs, limit) if limit is not None else set()
    shown: list[str | ErasedRun] = []
    for k, lines in enumerate(groups):
        gap = placeholders[k]
        shown.extend([gap] if k in collapsed and gap is not None else lines)
    return _join_erased(shown, tz)


def _join_erased(lines: list[str | ErasedRun], tz: str) -> list[str]:
    """Each run of erased messages next to each other as one line."""
    out: list[str] = []
    run: ErasedRun | None = None
    for line in [*lines, ""]:  # "" only flushes the last run
        if isinstance(line, ErasedRun) and run is not None and run.end == line.first:
            run = ErasedRun(run.first, line.end, run.first_at, line.last_at or run.last_at)
            continue
        if run is not None:
            out.append(run.line(tz))
        run = line if isinstance(line, ErasedRun) else None
        if isinstance(line, str) and line:
            out.append(line)
    return out


async def people_lines(session: AsyncSession, chat_id: int, budget: int) -> list[str]:
    """The chat's cards as lines, most active person first, as many as fit ``budget`` bytes."""
    out: list[str] = []
    used = 0
    for card in await read_cards(session, chat_id):
        line = people_line(card.name, card.text)
        used += utf8_len(line) + 1
        if used > budget:
            break
        out.append(line)
    return out


async def prompt_view(session: AsyncSession, config: MemoryConfig, chat_id: int) -> PromptView:
    chat = await get_chat(session, chat_id)
    state = await session.scalar(select(MemoryRow).where(MemoryRow.chat_id == chat_id))
    parts = [(int(a), int(b)) for a, b in (state.shown if state else [])]
    boundary = int(state.boundary) if state else 0
    view = PromptView(chat_id, chat.next_index, boundary, chat.timezone)
    view.row_lines = await row_lines(session, chat_id, parts, chat.timezone, config.view_high)
    view.people_lines = await people_lines(
        session, chat_id, config.people_bytes if config.people_cards else 0
    )
    first = boundary
    if chat.next_index > boundary:
        first = await keep_boundary(session, chat_id, boundary, chat.next_index, config.tail_cap)
        if first > boundary:
            view.dropped_from, view.dropped_to = boundary, first
    for m in await read_range(session, chat_id, first, chat.next_index):
        view.tail_lines.append(tail_line(m.idx, m.created_at, m.author_name, m.text, chat.timezone))
    return view
