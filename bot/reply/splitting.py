"""Split a reply into Discord messages of at most 2,000 characters (pure).

Cuts fall on the best boundary inside the limit: a paragraph break, else a line break, else a
space, else (one unbroken 2,000-character word) anywhere. A code fence open at a cut is closed
at the end of that chunk and reopened, with its language, at the start of the next, so every
chunk renders on its own. Past ``max_chunks`` the rest is dropped with a visible note: a reply
that long is a runaway, and ten messages in a row would flood the channel.

Lengths are counted in UTF-16 code units, which is never less than Discord's own count, so an
emoji-heavy chunk is never refused.
"""

from __future__ import annotations

import re

DISCORD_LIMIT = 2000
MAX_CHUNKS = 5
CUT_NOTE = "\n(… that was getting long, so I stopped there)"

_FENCE = re.compile(r"^\s*```(\S*)", re.MULTILINE)


def units(text: str) -> int:
    """Length as Discord's client counts it at most: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def _fit(text: str, budget: int) -> int:
    """The largest n such that text[:n] fits in ``budget`` code units."""
    if units(text) <= budget:
        return len(text)
    used, n = 0, 0
    for ch in text:
        size = 2 if ord(ch) > 0xFFFF else 1
        if used + size > budget:
            break
        used += size
        n += 1
    return n


def _open_fence(text: str) -> str | None:
    """The language tag ('' for none) of a code fence left open at the end of ``text``."""
    language: str | None = None
    for match in _FENCE.finditer(text):
        language = match.group(1) if language is None else None
    return language


def _cut_point(text: str, end: int) -> int:
    """Where to cut ``text`` at or before ``end``: the best boundary in the second half, if any."""
    window = text[:end]
    floor = end // 2  # a boundary in the first half would make tiny chunks; cut mid-word instead
    for separator in ("\n\n", "\n", " "):
        at = window.rfind(separator)
        if at > floor:
            return at + len(separator)
    return end


def split_message(text: str, limit: int = DISCORD_LIMIT, max_chunks: int = MAX_CHUNKS) -> list[str]:
    """Chunks of at most ``limit`` code units each, at most ``max_chunks`` of them."""
    if limit < 64:
        raise ValueError("limit must leave room for code fences (at least 64)")
    rest = text.strip()
    chunks: list[str] = []
    reopen = ""  # "```lang\n" when the previous chunk ended inside a fence
    while rest:
        body = reopen + rest
        if units(body) <= limit:
            chunks.append(body)
            break
        # Reserve room for a closing fence, which this chunk may need.
        end = _fit(body, limit - 4)
        cut = _cut_point(body, end)
        if cut <= len(reopen):  # only the reopened fence fits before the boundary: cut hard
            cut = end
        head, rest = body[:cut].rstrip(), body[cut:].lstrip("\n ")
        language = _open_fence(head)
        if language is not None:
            head += "\n```"
            reopen = f"```{language[:20]}\n"  # a short tag: the reopened fence must leave room
        else:
            reopen = ""
        if head.strip():
            chunks.append(head)
    if len(chunks) > max_chunks:
        last = chunks[max_chunks - 1]
        keep = _fit(last, limit - units(CUT_NOTE) - 4)
        last = last[:keep].rstrip()
        if _open_fence(last) is not None:
            last += "\n```"
        chunks = [*chunks[: max_chunks - 1], last + CUT_NOTE]
    return chunks
