"""What the reply model reads for a chat: the memory row and the raw tail (DESIGN.md 7).

The row is loaded as persisted, never rebuilt from the log. A part an erasure or edit
removed shows through its surviving built descendants until the compactor rebuilds it.
The raw tail is capped at TAIL_CAP: when the compactor is behind (model down), the oldest
part is left out with a note pointing at `recall`, so a prompt never outgrows the window.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.config import MemoryConfig
from memory.log import get_chat, read_range
from memory.models import MemoryRow
from memory.nodes import resolve
from memory.planner import keep_boundary
from memory.render import memory_block, placeholder_line, row_line, tail_line
from memory.tree import Node


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

    @property
    def dropped_note(self) -> str | None:
        if self.dropped_from is None or self.dropped_to is None:
            return None
        return (
            f"(messages #{self.dropped_from} to #{self.dropped_to - 1} are not summarized yet and do not fit "
            "here; use recall to search them)"
        )

    def memory_text(self) -> str:
        return memory_block(self.row_lines)

    def tail_text(self) -> str:
        lines = ([self.dropped_note] if self.dropped_note else []) + self.tail_lines
        return "\n".join(lines)

    def render(self) -> str:
        """The exact text `eva view` and `/memory view` show."""
        return self.memory_text() + "\n" + self.tail_text() + ("\n" if self.tail_lines else "")


async def row_lines(session: AsyncSession, chat_id: int, parts: list[Node], tz: str) -> list[str]:
    lines = []
    for node, record in await resolve(session, chat_id, parts):
        if record is None:
            lines.append(placeholder_line(node, None, tz))
        else:
            lines.append(row_line(record.info(), tz))
    return lines


async def prompt_view(session: AsyncSession, config: MemoryConfig, chat_id: int) -> PromptView:
    chat = await get_chat(session, chat_id)
    state = await session.scalar(select(MemoryRow).where(MemoryRow.chat_id == chat_id))
    parts = [(int(a), int(b)) for a, b in (state.shown if state else [])]
    boundary = int(state.boundary) if state else 0
    view = PromptView(chat_id, chat.next_index, boundary, chat.timezone)
    view.row_lines = await row_lines(session, chat_id, parts, chat.timezone)
    first = boundary
    if chat.next_index > boundary:
        first = await keep_boundary(session, chat_id, boundary, chat.next_index, config.tail_cap)
        if first > boundary:
            view.dropped_from, view.dropped_to = boundary, first
    for m in await read_range(session, chat_id, first, chat.next_index):
        view.tail_lines.append(tail_line(m.idx, m.created_at, m.author_name, m.text, chat.timezone))
    return view
