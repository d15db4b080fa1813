"""How the model and people see the memory: row lines and raw-tail lines (pure).

Row line:  ``{id}+{n} {date}|{text}`` with ``date`` = ``YYYY-MM-DD`` or ``first..last``
           when the line spans several days, in the chat's time zone; newlines as `` / ``.
Tail line: ``#{i} {YYYY-MM-DD HH:MM} {author}: {text}``, the words as written; the message's own
           line breaks continue on lines indented by four spaces, so only a message's
           first line starts with ``#`` (a message cannot pose as another one).

Chat text never breaks our frames: ``<memory>``, ``</memory>`` and the like inside a
message are bent (``‹/memory>``) so a message cannot close the block and pose as the
system (prompt injection hardening).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo

from memory.text.frame_tags import neutralize_frames
from memory.text.lines import flatten, indent_continuations
from memory.text.names import speaker
from memory.tree.node import Node, address, utf8_len

PLACEHOLDER = "(not summarized yet: zoom it)"
REBUILDING = "(being rebuilt; zoom or recall to read it)"
ERASED = "(erased)"


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


@dataclass(frozen=True, slots=True)
class LineInfo:
    """A built node as the renderer needs it."""

    node: Node
    text: str
    first_at: datetime | None
    last_at: datetime | None


def date_span(first: datetime | None, last: datetime | None, tz: str) -> str:
    if first is None or last is None:
        return "?"
    a = first.astimezone(zone(tz)).date()
    b = last.astimezone(zone(tz)).date()
    return a.isoformat() if a == b else f"{a.isoformat()}..{b.isoformat()}"


def row_line(info: LineInfo, tz: str) -> str:
    # An empty line is an erased stretch: say so rather than show a blank.
    text = neutralize_frames(flatten(info.text)) if info.text else ERASED
    return f"{address(info.node)} {date_span(info.first_at, info.last_at, tz)}|{text}"


@dataclass(frozen=True, slots=True)
class ErasedRun:
    """Erased messages in a row, ``first`` to ``end`` (exclusive), shown as one line: after
    `eva forget` a row showed one "(erased)" line per message (157 of them in one chat, which
    took it from 239 to 581 lines). Its address has the line form, ``first+count``; a run of one
    is exactly the line the erased node alone would show."""

    first: int
    end: int
    first_at: datetime | None
    last_at: datetime | None

    def line(self, tz: str) -> str:
        return f"{self.first}+{self.end - self.first} {date_span(self.first_at, self.last_at, tz)}|{ERASED}"


def row_line_bytes(info: LineInfo, tz: str) -> int:
    """Bytes the line costs in the row budget, its newline included."""
    return utf8_len(row_line(info, tz)) + 1


def placeholder_line(node: Node, when: datetime | None, tz: str) -> str:
    """Shown only while an edited message waits for its new line; never sent to the compactor."""
    return f"{address(node)} {date_span(when, when, tz)}|{PLACEHOLDER}"


def rebuilding_line(node: Node, first: datetime | None, last: datetime | None, tz: str) -> str:
    """A part of the row an erasure removed, too big to show through its descendants."""
    return f"{address(node)} {date_span(first, last, tz)}|{REBUILDING}"


def tail_line(index: int, created_at: datetime, author: str | None, text: str | None, tz: str) -> str:
    stamp = created_at.astimezone(zone(tz)).strftime("%Y-%m-%d %H:%M")
    if author is None:
        return f"#{index} {stamp} {ERASED}"
    said = indent_continuations(f"{speaker(author)}: {text or ''}")
    return f"#{index} {stamp} {neutralize_frames(said)}"


def people_line(name: str, card: str) -> str:
    """One person's card as the reply model reads it: ``{name}: {card}`` on one line, the
    name as a speaker's (it cannot pose as another line) and the whole frame-neutralized."""
    return neutralize_frames(f"{speaker(name)}: {flatten(card)}")


def people_block(lines: Sequence[str]) -> str:
    """The ``<people>`` block before the row; empty when there are no cards."""
    return "<people>\n" + "".join(line + "\n" for line in lines) + "</people>\n" if lines else ""


def memory_block(lines: Sequence[str]) -> str:
    return "<memory>\n" + "".join(line + "\n" for line in lines) + "</memory>"


def bare_text(text: str) -> str:
    """A row line's text as the compactor's context shows it: no head, one physical line."""
    return flatten(text)
