"""What the bot itself wrote about a person who is erased (docs/design.md, erasure).

A bot's words are not a person's: when person P is erased (forget-me, ``eva forget``), what the
bot said to and about P goes with P, as far as the log can tell it apart.

- The bot's replies to P's erased messages are erased with them (:func:`bot_replies`): the
  reply reference says what they answer, and every part of a long reply carries it.
- A bot message that quotes one of P's erased messages (a run of QUOTE_WORDS words of it, or
  the whole of a message of at least MIN_QUOTE_WORDS words) is erased too (:func:`bot_quotes`):
  P's words must not live on in the bot's.
- In the bot's other messages every name P was shown under (as author, as mentioned, and what
  the caller knows P by) becomes ``@unknown-user`` as a whole word (:func:`redact_bot_messages`,
  memory/text/mentions.py ``redact_names``). What the bot said about P in other words stays: a
  paraphrase names no one the log can find.

Each statement here reads one chat's messages in its primary-key range (replies and quotes
come after what they answer) or uses the trigram index on (chat, text).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.privacy.rebuild import drop_lines_over, lock_rows
from memory.storage.log import tail_line_bytes
from memory.storage.models import Message
from memory.text.mentions import redact_names

# A quote is a run of five words of P's message in the bot's (about a clause: "my flat is on
# Birch"); a message of four words or fewer is quoted only whole, and one of three or fewer
# ("see you tomorrow") is too common a phrase to count as P's.
QUOTE_WORDS = 5
MIN_QUOTE_WORDS = 4
_WORD = re.compile(r"\w+")
_REPLY_MARK = re.compile(r" ?\(reply to #\d+\)$")  # the log's reply note: not P's words
# Messages read per statement when looking for quotes (a few hundred KB of text at a time).
QUOTE_PAGE = 2_000

Runs = dict[int, set[tuple[str, ...]]]  # runs of words by their length (5, or 4 for a whole message)


def _words(text: str) -> list[str]:
    return _WORD.findall(_REPLY_MARK.sub("", text).casefold())


def word_runs(texts: Iterable[str]) -> Runs:
    """The runs of words a quote of ``texts`` would share with them: every QUOTE_WORDS words of
    a longer message, a shorter one whole (MIN_QUOTE_WORDS words at least)."""
    runs: Runs = {}
    for text in texts:
        words = _words(text)
        if len(words) < MIN_QUOTE_WORDS:
            continue
        size = min(QUOTE_WORDS, len(words))
        runs.setdefault(size, set()).update(tuple(words[k : k + size]) for k in range(len(words) - size + 1))
    return runs


def quotes(text: str, runs: Runs) -> bool:
    """Whether ``text`` holds one of ``runs`` (case and punctuation aside)."""
    if not runs:
        return False
    words = _words(text)
    return any(
        tuple(words[k : k + size]) in wanted
        for size, wanted in runs.items()
        for k in range(len(words) - size + 1)
    )


async def bot_replies(session: AsyncSession, chat_id: int, indexes: Iterable[int]) -> list[int]:
    """Bot messages (not erased) that reply to one of ``indexes``, and bot messages replying to
    those in turn: a bot's answer to a message goes with it. One statement per level of the
    chain (usually one)."""
    erased = set(indexes)
    found: set[int] = set()
    frontier = set(erased)
    while frontier:
        rows = await session.scalars(
            select(Message.idx).where(
                Message.chat_id == chat_id,
                Message.idx > min(frontier),  # a reply always comes after what it answers
                Message.is_bot,
                Message.erased_at.is_(None),
                Message.reply_to.in_(sorted(frontier)),
            )
        )
        frontier = set(rows.all()) - found - erased
        found |= frontier
    return sorted(found)


async def bot_quotes(
    session: AsyncSession, chat_id: int, texts: Sequence[str], after: int, skip: Iterable[int] = ()
) -> list[int]:
    """Bot messages (not erased) after index ``after`` that quote one of ``texts``; the
    messages in ``skip`` (already going) are not reported. Read a page at a time."""
    runs = word_runs(texts)
    if not runs:
        return []
    skipped = set(skip)
    found: list[int] = []
    last = after
    while True:
        rows = (
            await session.execute(
                select(Message.idx, Message.text)
                .where(
                    Message.chat_id == chat_id,
                    Message.idx > last,
                    Message.is_bot,
                    Message.erased_at.is_(None),
                    Message.text.is_not(None),
                )
                .order_by(Message.idx)
                .limit(QUOTE_PAGE)
            )
        ).all()
        found += [int(idx) for idx, text in rows if idx not in skipped and quotes(text or "", runs)]
        if len(rows) < QUOTE_PAGE:
            return found
        last = int(rows[-1][0])


async def redact_bot_messages(
    session: AsyncSession, chat_ids: Iterable[int], names: Iterable[str]
) -> tuple[int, int]:
    """Take ``names`` out of the bot's messages (not erased) in ``chat_ids``, as whole words
    (memory/text/mentions.py ``redact_names``); returns the messages changed and the lines deleted
    for rebuilding. The trigram index on (chat, text) finds the candidates."""
    ids = list(chat_ids)
    usable = sorted({name.strip() for name in names if len(name.strip()) >= 2})
    if not ids or not usable:
        return 0, 0
    holding = (
        Message.chat_id.in_(ids),
        Message.is_bot,
        Message.erased_at.is_(None),
        or_(*(Message.text.icontains(name, autoescape=True) for name in usable)),
    )
    chats = sorted(set((await session.scalars(select(Message.chat_id).where(*holding))).all()))
    if not chats:
        return 0, 0
    states = await lock_rows(session, chats)
    rows = (
        await session.scalars(
            select(Message).where(*holding).order_by(Message.chat_id, Message.idx).with_for_update()
        )
    ).all()
    changed: dict[int, list[int]] = {}
    for m in rows:
        text = redact_names(m.text or "", usable)
        files = [redact_names(name, usable) for name in (m.attachments or [])]
        if text == m.text and files == (m.attachments or []):
            continue  # the name was part of a longer word ("Alice" in "Alicetown")
        m.text, m.attachments = text, files or None
        m.line_bytes = tail_line_bytes(m.idx, m.author_name, text)
        changed.setdefault(m.chat_id, []).append(m.idx)
    lines = await drop_lines_over(session, changed, states)
    return sum(len(indexes) for indexes in changed.values()), lines
