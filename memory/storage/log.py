"""The log: chats and their messages, word for word, with dense per-chat indexes.

Message ``i`` of a chat is assigned atomically: the chat row is updated (and so locked)
in the same statement that inserts the message, so concurrent appends serialize per chat
and never leave a gap. A snowflake already logged is skipped by that same statement; one
committed by a racing transaction meanwhile hits the unique key and the whole statement rolls
back, increment included (idempotent ingest).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, Text, bindparam, case, func, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.errors import ChatNotFound
from memory.storage.models import Chat, Message
from memory.storage.search_config import choose, undecided
from memory.text.language import SIMPLE
from memory.text.mentions import MentionNames, render_mentions, with_raw_mentions
from memory.text.records import ImportedMessage, message_text
from memory.tree.node import utf8_len
from memory.tree.render import tail_line


@dataclass(frozen=True, slots=True)
class ChatKey:
    """Where a memory lives. ``discord_id`` None means an imported log named ``name``."""

    kind: str  # text, thread, dm, imported
    name: str
    discord_id: int | None = None
    guild_id: int | None = None
    parent_id: int | None = None
    recipient_id: int | None = None  # a DM chat's person


@dataclass(frozen=True, slots=True)
class NewMessage:
    author_name: str
    created_at: datetime
    content: str
    author_id: int | None = None
    snowflake: int | None = None
    is_bot: bool = False
    attachments: tuple[str, ...] = field(default_factory=tuple)  # "file:a.png", "sticker:x", "embed:T"
    reply_to: int | None = None  # log index of the replied message, if logged
    edited_at: datetime | None = None
    # The people ``content`` mentions and the name shown for each (memory/text/mentions.py); raw
    # <@id> tokens left in ``content`` are added when the row is written.
    mention_ids: tuple[int, ...] = ()
    mention_names: tuple[str, ...] = ()


def from_import(record: ImportedMessage, reply_index: int | None) -> NewMessage:
    """An exported message as a log entry, its mentions shown as names the way live ingest
    shows them: raw tokens (an export made with ``--markdown false``) are rendered from the
    export's own tables, and the people it says it mentions are kept either way (DCE's default
    export has already written them as "@name")."""
    names = MentionNames(
        users=dict(record.mentions), channels=dict(record.channels), roles=dict(record.roles)
    )
    rendered = render_mentions(record.content, names)
    # A reply also lists the replied person among its mentions; keep those the text shows.
    shown_in_text = [(person, name) for person, name in record.mentions if f"@{name}" in rendered.text]
    ids, shown = with_raw_mentions(
        rendered.text, rendered.mention_ids, rendered.mention_names, extra=shown_in_text
    )
    return NewMessage(
        author_name=record.author_name,
        created_at=record.created_at,
        content=rendered.text,
        author_id=record.author_id,
        snowflake=record.snowflake,
        is_bot=record.is_bot,
        attachments=record.attachments,
        reply_to=reply_index,
        edited_at=record.edited_at,
        mention_ids=ids,
        mention_names=shown,
    )


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """PostgreSQL text cannot hold NUL (U+0000); Discord can. Nor can UTF-8 hold a lone
    surrogate, which a JSON import can (``"\\ud83d"``). Keep each slot visible as U+FFFD rather
    than fail the append and lose the message (or the whole import)."""
    return _UNSTORABLE.sub("\ufffd", text)


@dataclass(frozen=True, slots=True)
class StoredWords:
    """The columns of a message that hold what was written, as stored: ``text``,
    ``attachments``, ``mention_ids`` and ``mention_names`` (None for an empty list)."""

    text: str
    attachments: list[str] | None
    mention_ids: list[int] | None
    mention_names: list[str] | None


def stored_words(
    content: str,
    attachments: Sequence[str],
    reply_to: int | None,
    mentions: tuple[Sequence[int], Sequence[str]] = ((), ()),
) -> StoredWords:
    """The one rule for what the log stores of a message's words, shared by the append (and
    so imports and the backfill) and the edit: every text column made :func:`storable`, so a
    NUL or a lone surrogate in a file or embed name can fail neither (the edit's own copy of
    this once left attachment names raw, and the edit failed and kept the old text)."""
    ids, names = with_raw_mentions(content, *mentions)
    return StoredWords(
        text=storable(message_text(content, attachments, reply_to)),
        attachments=[storable(name) for name in attachments] or None,
        mention_ids=list(ids) or None,
        mention_names=[storable(name) for name in names] or None,
    )


def _row_values(chat_id: int, index: int, msg: NewMessage, config: str | None = None) -> dict[str, object]:
    words = stored_words(msg.content, msg.attachments, msg.reply_to, (msg.mention_ids, msg.mention_names))
    author = storable(msg.author_name[:200])
    return {
        "chat_id": chat_id,
        "idx": index,
        "snowflake": msg.snowflake,
        "author_id": msg.author_id,
        "author_name": author,
        "is_bot": msg.is_bot,
        "created_at": msg.created_at,
        "edited_at": msg.edited_at,
        "text": words.text,
        "attachments": words.attachments,
        "reply_to": msg.reply_to,
        "line_bytes": tail_line_bytes(index, author, words.text),
        "mention_ids": words.mention_ids,
        "mention_names": words.mention_names,
        "search_config": config or SIMPLE,
    }


def tail_line_bytes(index: int, author: str | None, body: str | None) -> int:
    """Bytes of the message's raw-tail line (its newline included). The time stamp has a
    fixed width, so the size does not depend on the chat's time zone."""
    return utf8_len(tail_line(index, _EPOCH, author, body, "UTC")) + 1


_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)

# One round trip, the duplicate check included: the UPDATE takes the next index and row-locks
# the chat until commit, so concurrent appends to one chat serialize and indexes stay dense;
# a logged snowflake skips the UPDATE (no index taken) and the INSERT. A snowflake committed
# by a racing transaction after this one's snapshot still hits the unique key (the backstop).
_APPEND = text("""
    WITH dup AS (
        SELECT 1 FROM messages WHERE chat_id = :chat_id AND snowflake = :snowflake
    ), slot AS (
        UPDATE chats SET next_index = next_index + 1,
                         last_message_at = GREATEST(last_message_at, :created_at)
        WHERE id = :chat_id AND NOT EXISTS (SELECT 1 FROM dup)
        RETURNING next_index - 1 AS idx, search_config, guild_id
    ), added AS (
        INSERT INTO messages (chat_id, idx, snowflake, author_id, author_name, is_bot, created_at,
                              edited_at, text, attachments, reply_to, line_bytes, mention_ids,
                              mention_names, search_config)
        SELECT :chat_id, slot.idx, :snowflake, :author_id, :author_name, :is_bot, :created_at,
               :edited_at, :text, :attachments, :reply_to,
               :line_bytes - 1 + octet_length(slot.idx::text), :mention_ids, :mention_names,
               coalesce(slot.search_config, 'eva_simple'::regconfig)
        FROM slot
        RETURNING idx
    )
    SELECT (SELECT idx FROM added), EXISTS (SELECT 1 FROM dup),
           (SELECT search_config::text FROM slot), (SELECT guild_id FROM slot)
""").bindparams(
    bindparam("attachments", type_=JSONB),
    bindparam("mention_ids", type_=ARRAY(BigInteger)),
    bindparam("mention_names", type_=ARRAY(Text)),
)


async def append(session: AsyncSession, chat_id: int, msg: NewMessage) -> int | None:
    """Log one message; its index, or None if this snowflake is already logged.

    Two appends of the same snowflake racing in two transactions: the loser gets the
    unique-key IntegrityError at this statement and must roll back (ingest treats it as
    a duplicate).
    """
    values = _row_values(chat_id, 0, msg)  # idx comes from the chat row; line_bytes adds its digits
    index, duplicate, config, guild_id = (await session.execute(_APPEND, values)).one()
    if duplicate:
        return None
    if index is None:
        raise ChatNotFound(f"no chat with id {chat_id}")
    if undecided(config, int(index) + 1):
        await choose(session, chat_id, guild_id, int(index) + 1)
    return int(index)


async def append_replies(
    session: AsyncSession, chat_id: int, items: Sequence[tuple[NewMessage, int | None]]
) -> list[int | None]:
    """Log messages in order, each with the snowflake of the message it replies to (or None);
    their indexes (None: already logged). Four statements for any number of messages: lock
    the chat row, look up the batch's and its reply targets' snowflakes, one multi-row
    INSERT, the chat's new count. A reply to a message of the same batch finds it here."""
    if not items:
        return []
    # The lock first: a writer of this chat that committed meanwhile is then visible to the
    # lookup below (each statement reads a fresh snapshot), so two writers never both insert
    # a snowflake. Another process racing without the lock still meets the unique key. A wipe
    # takes the same lock, so its moment (erased_before) read here is the committed one.
    row = (
        await session.execute(
            select(Chat.next_index, Chat.erased_before, Chat.search_config, Chat.guild_id)
            .where(Chat.id == chat_id)
            .with_for_update()
        )
    ).one_or_none()
    if row is None:
        raise ChatNotFound(f"no chat with id {chat_id}")
    erased_before, config, guild_id = row[1], row[2], row[3]
    wanted = {m.snowflake for m, _ in items if m.snowflake is not None}
    wanted |= {replied for _, replied in items if replied is not None}
    known: dict[int, int] = {}
    if wanted:
        rows = await session.execute(
            select(Message.snowflake, Message.idx).where(
                Message.chat_id == chat_id, Message.snowflake.in_(wanted)
            )
        )
        known = {int(snowflake): int(idx) for snowflake, idx in rows if snowflake is not None}
    index = int(row[0])
    out: list[int | None] = []
    values: list[dict[str, object]] = []
    for msg, replied in items:
        if msg.snowflake is not None and msg.snowflake in known:
            out.append(None)  # logged before, or earlier in this batch
            continue
        if msg.snowflake is not None and erased_before is not None and msg.snowflake < erased_before:
            out.append(None)  # written before the chat was wiped: erased with the rest
            continue
        if replied is not None:
            msg = replace(msg, reply_to=known.get(replied))
        values.append(_row_values(chat_id, index, msg, config))
        if msg.snowflake is not None:
            known[msg.snowflake] = index
        out.append(index)
        index += 1
    if values:
        await session.execute(insert(Message), values)
        if undecided(config, index):
            await choose(session, chat_id, guild_id, index)
        newest = max(v["created_at"] for v in values)  # type: ignore[type-var]
        logged = [v["snowflake"] for v in values if isinstance(v["snowflake"], int)]
        newest_snowflake = max(logged, default=None)
        floor: Any = Chat.backfill_floor
        if newest_snowflake is not None:  # the log is past an erasure's floor: it has done its work
            floor = case((Chat.backfill_floor <= newest_snowflake, None), else_=Chat.backfill_floor)
        await session.execute(
            update(Chat)
            .where(Chat.id == chat_id)
            .values(
                next_index=index,
                last_message_at=func.greatest(Chat.last_message_at, newest),
                backfill_floor=floor,
            )
        )
    return out


async def append_many(session: AsyncSession, chat_id: int, msgs: Sequence[NewMessage]) -> list[int | None]:
    """Log a batch in order (imports, backfill): one lock, one multi-row insert."""
    if not msgs:
        return []
    snowflakes = [m.snowflake for m in msgs if m.snowflake is not None]
    known: set[int] = set()
    if snowflakes:
        rows = await session.scalars(
            select(Message.snowflake).where(Message.chat_id == chat_id, Message.snowflake.in_(snowflakes))
        )
        known = {s for s in rows.all() if s is not None}
    fresh, seen = [], set(known)
    for m in msgs:
        if m.snowflake is not None and m.snowflake in seen:
            continue
        if m.snowflake is not None:
            seen.add(m.snowflake)
        fresh.append(m)
    if not fresh:
        return [None] * len(msgs)
    row = (
        await session.execute(
            select(Chat.next_index, Chat.search_config, Chat.guild_id)
            .where(Chat.id == chat_id)
            .with_for_update()
        )
    ).one_or_none()
    if row is None:
        raise ChatNotFound(f"no chat with id {chat_id}")
    first, config, guild_id = int(row[0]), row[1], row[2]
    values = [_row_values(chat_id, first + k, m, config) for k, m in enumerate(fresh)]
    await session.execute(insert(Message), values)
    if undecided(config, first + len(fresh)):
        await choose(session, chat_id, guild_id, first + len(fresh))
    await session.execute(
        update(Chat)
        .where(Chat.id == chat_id)
        .values(
            next_index=first + len(fresh),
            last_message_at=func.greatest(Chat.last_message_at, max(m.created_at for m in fresh)),
        )
    )
    assigned = iter(range(first, first + len(fresh)))
    fresh_ids = {id(m) for m in fresh}
    return [next(assigned) if id(m) in fresh_ids else None for m in msgs]


async def index_of_snowflake(session: AsyncSession, chat_id: int, snowflake: int) -> int | None:
    return await session.scalar(
        select(Message.idx).where(Message.chat_id == chat_id, Message.snowflake == snowflake)
    )


async def last_snowflake(session: AsyncSession, chat_id: int) -> int | None:
    """The newest logged Discord message of the chat."""
    return await session.scalar(select(func.max(Message.snowflake)).where(Message.chat_id == chat_id))


async def backfill_start(session: AsyncSession, chat_id: int) -> int | None:
    """The snowflake a backfill fetches the history after: the newest logged message, but never
    below an erasure's moment (a wipe's, or a person's erasure's floor: the history before it
    was handled before the erasure committed, and fetching it again would bring erased
    messages back). None: nothing logged and no erasure, so nowhere to start."""
    newest = select(func.max(Message.snowflake)).where(Message.chat_id == chat_id).scalar_subquery()
    query = select(newest, Chat.backfill_floor, Chat.erased_before).where(Chat.id == chat_id)
    row = (await session.execute(query)).one_or_none()
    if row is None:
        return None
    logged, floor, erased_before = row
    after_wipe = erased_before - 1 if erased_before is not None else None
    starts = [s for s in (logged, floor, after_wipe) if s is not None]
    return max(starts) if starts else None


async def read_range(session: AsyncSession, chat_id: int, first: int, stop: int) -> list[Message]:
    rows = await session.scalars(
        select(Message)
        .where(Message.chat_id == chat_id, Message.idx >= first, Message.idx < stop)
        .order_by(Message.idx)
    )
    return list(rows.all())


async def range_bytes(session: AsyncSession, chat_id: int, first: int) -> int:
    """Bytes of the raw-tail lines of messages ``[first, T)``, without reading their text."""
    total = await session.scalar(
        select(func.coalesce(func.sum(Message.line_bytes), 0)).where(
            Message.chat_id == chat_id, Message.idx >= first
        )
    )
    return int(total or 0)


async def keep_boundary(session: AsyncSession, chat_id: int, first: int, total: int, keep: int) -> int:
    """The first message of the newest stretch that fits in ``keep`` bytes (at least one
    message stays raw, so the model always sees the newest words whole)."""
    found = await session.scalar(
        text("""
        SELECT min(idx) FROM (
            SELECT idx, sum(line_bytes) OVER (ORDER BY idx DESC) AS suffix
            FROM messages WHERE chat_id = :chat_id AND idx >= :first
        ) s WHERE suffix <= :keep
    """),
        {"chat_id": chat_id, "first": first, "keep": keep},
    )
    return min(int(found) if found is not None else total, total - 1)
