"""`zoom` and `recall`: the two ways back from a summary line to the words themselves.

One implementation for the model's tools, the slash commands and the CLI. Results are
plain text, bounded in size, and every error is one sentence (BadRequest).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.errors import BadRequest
from memory.reading.search import Filters, Found, search
from memory.storage.chats import get_chat
from memory.storage.log import read_range, storable
from memory.storage.models import Message
from memory.storage.tree_nodes import resolve
from memory.text.lines import CONTINUATION
from memory.tree.node import AddressError, Node, address, children, node_for, parse_address
from memory.tree.render import PLACEHOLDER, row_line, tail_line

PAGE_INDENT = CONTINUATION.lstrip("\n")  # every page after the first starts indented
PAGE_CHARS = 4000  # one page of a long message: 4,000 chars ~ 1,000 tokens
ZOOM_MAX_LINES = 64  # an unbuilt stretch expands into at most this many lines
RECALL_MESSAGE_CHARS = 600  # each message in a recall hit, then a pointer to zoom(k, 1)
RECALL_MAX_LIMIT = 20
RECALL_QUERY_CHARS = 200


def _node(total: int, first: int, count: int) -> Node:
    try:
        return node_for(first, count, total)
    except AddressError as exc:
        raise BadRequest(str(exc)) from None


def parse(text_address: str, total: int) -> tuple[int, int]:
    try:
        first, count = parse_address(text_address)
    except AddressError as exc:
        raise BadRequest(str(exc)) from None
    _node(total, first, count)
    return first, count


def _message_pages(m: Message, tz: str, page: int) -> str:
    whole = tail_line(m.idx, m.created_at, m.author_name, m.text, tz)
    if m.edited_at is not None and m.author_name is not None:
        whole += " (edited)"
    pages = max(1, -(-len(whole) // PAGE_CHARS))
    if page < 1 or page > pages:
        raise BadRequest(f"message #{m.idx} has {pages} page(s); ask for page 1 to {pages}")
    if pages == 1:
        return whole
    body = whole[(page - 1) * PAGE_CHARS : page * PAGE_CHARS]
    if page > 1:
        # Indented like the message's continuation lines: a page cut anywhere in the text
        # must not start a line that poses as another message ("#9999 ... bob: ...").
        body = PAGE_INDENT + body
    more = f" Next: zoom({m.idx}, 1, page={page + 1})." if page < pages else ""
    return f"(page {page} of {pages} of message #{m.idx}.{more})\n{body}"


async def zoom(session: AsyncSession, chat_id: int, first: int, count: int, page: int = 1) -> str:
    """``count == 1``: message ``first`` whole (in pages when long). Otherwise the two lines
    of ``count/2`` under line ``first+count``; an unbuilt half shows through its built
    descendants, never as cut text."""
    chat = await get_chat(session, chat_id)
    node = _node(chat.next_index, first, count)
    if count == 1:
        messages = await read_range(session, chat_id, first, first + 1)
        if not messages:
            raise BadRequest(f"message #{first} is not in this chat's log")
        return _message_pages(messages[0], chat.timezone, page)
    lines: list[str] = []
    resolved = await resolve(session, chat_id, list(children(node)), limit=ZOOM_MAX_LINES)
    for part, record in resolved[:ZOOM_MAX_LINES]:
        if record is not None:
            lines.append(row_line(record.info(), chat.timezone))
        else:
            lines.append(f"{address(part)} ?|{PLACEHOLDER}")
    if len(resolved) > ZOOM_MAX_LINES:
        lines.append(f"(and {len(resolved) - ZOOM_MAX_LINES} more lines: zoom into a smaller part)")
    return "\n".join(lines)


_LIKE_SPECIALS = re.compile(r"([\\%_])")


def _like_escape(value: str) -> str:
    """A literal for ILIKE: the query's own % and _ match only themselves."""
    return _LIKE_SPECIALS.sub(r"\\\1", value)


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """What ``recall`` looks for: words or a fragment, optionally by one author (a name
    fragment, or the id of a person the bot has seen), and how many hits it keeps."""

    text: str
    author: str | None = None
    author_id: int | None = None
    limit: int = 5


async def recall_hits(session: AsyncSession, chat_id: int, query: RecallQuery) -> list[Found]:
    author, author_id, limit = query.author, query.author_id, query.limit
    # Stored text has U+FFFD where a message had NUL: search the same way (and never send
    # PostgreSQL a NUL, which it refuses).
    words = " ".join(storable(query.text).split())
    if not words:
        raise BadRequest("recall needs at least one word to search for")
    if len(words) > RECALL_QUERY_CHARS:
        raise BadRequest(f"recall takes at most {RECALL_QUERY_CHARS} characters; search for fewer words")
    if not 1 <= limit <= RECALL_MAX_LIMIT:
        raise BadRequest(f"recall limit must be between 1 and {RECALL_MAX_LIMIT}")
    # Trigram matching of a fragment ("padd" finds "paddle") needs 3+ characters to use its index.
    # Emoji and punctuation make no full-text terms, so they are matched as a substring too.
    fragment = len(words) >= 3 or not any(ch.isalnum() for ch in words)
    pattern = f"%{_like_escape(words)}%" if fragment else None
    author_pattern = f"%{_like_escape(storable(author).strip())}%" if author and author.strip() else None
    total = (await get_chat(session, chat_id)).next_index  # from the session's identity map in recall()
    filters = Filters(chat_id, words, pattern, author_pattern, author_id)
    return await search(session, filters, total, limit)


def _clip(line: str, index: int) -> str:
    if len(line) <= RECALL_MESSAGE_CHARS:
        return line
    return line[:RECALL_MESSAGE_CHARS] + f" [… zoom({index}, 1) for the whole message]"


def _hit_head(n: int, hit: Found) -> str:
    """ "Hit n" holds every word of the query; "Partial hit n" some of them, named."""
    if hit.every_word or not hit.words:
        return f"Hit {n}: message #{hit.index}"
    return f"Partial hit {n}: message #{hit.index} (has: {', '.join(hit.words)})"


async def recall(
    session: AsyncSession, chat_id: int, query: RecallQuery, *, around: int = 2, max_chars: int = 8000
) -> str:
    """Messages matching ``query`` (words, or a fragment of a word or name), best first,
    each with ``around`` messages before and after it."""
    chat = await get_chat(session, chat_id)
    hits = await recall_hits(session, chat_id, query)
    if not hits:
        who = f" from {query.author}" if query.author else ""
        return f"No message{who} matches {' '.join(query.text.split())!r}."
    wanted = sorted({k for h in hits for k in range(max(0, h.index - around), h.index + around + 1)})
    # Only the wanted slots: hits far apart must not read every message between them (on a
    # 100K-message chat a range read made recall take seconds; see docs/benchmarks.md).
    rows = await session.scalars(select(Message).where(Message.chat_id == chat_id, Message.idx.in_(wanted)))
    messages = {m.idx: m for m in rows.all()}
    blocks, used = [], 0
    for n, hit in enumerate(hits, start=1):
        lines = [_hit_head(n, hit)]
        for k in range(max(0, hit.index - around), hit.index + around + 1):
            m = messages.get(k)
            if m is not None:
                mark = ">" if k == hit.index else " "
                lines.append(
                    mark + _clip(tail_line(m.idx, m.created_at, m.author_name, m.text, chat.timezone), k)
                )
        block = "\n".join(lines)
        if used + len(block) > max_chars:
            blocks.append(
                f"({len(hits) - n + 1} more hits left out to keep this short; search more precisely)"
            )
            break
        blocks.append(block)
        used += len(block)
    return "\n\n".join(blocks)
