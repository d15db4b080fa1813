"""Erasure and edits (docs/design.md section 8), each in one transaction.

An erased message keeps its slot (index and time) with no text and no author; every node
that covered it is deleted, the row version moves (so a compactor call in flight cannot
write a line built from the erased words), and the row is marked for repair: its parts
show through their surviving descendants until the compactor rebuilds them from the
remaining messages. An edit replaces the text and rebuilds only the nodes above it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Text, cast, delete, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from memory.privacy.bot_words import bot_quotes, bot_replies, redact_bot_messages
from memory.privacy.mention_erasure import person_names, scrub_mentions
from memory.privacy.rebuild import drop_lines_over
from memory.storage.log import stored_words, tail_line_bytes
from memory.storage.models import Chat, MemoryRow, Message, TreeNode
from memory.storage.people_cards import drop_cards, drop_cards_about
from memory.storage.tree_nodes import NodeWrite, delete_covering, insert_nodes
from memory.text.mentions import MentionNames, names_for_version, render_mentions, same_but_redacted, sealed


@dataclass(slots=True)
class ErasureReport:
    messages: int = 0
    nodes: int = 0  # lines deleted (they are rebuilt without the erased words)
    chats: int = 0
    mentions: int = 0  # other people's messages that named the erased person (name taken out)
    replies: int = 0  # the bot's messages answering or quoting the erased person's, erased with them
    names: int = 0  # the bot's other messages that named them in plain text (name taken out)

    def add(self, other: ErasureReport) -> None:
        self.messages += other.messages
        self.nodes += other.nodes
        self.chats += other.chats
        self.mentions += other.mentions
        self.replies += other.replies
        self.names += other.names


async def _lock_row(session: AsyncSession, chat_id: int) -> MemoryRow | None:
    return (
        await session.execute(select(MemoryRow).where(MemoryRow.chat_id == chat_id).with_for_update())
    ).scalar_one_or_none()


_ERASED_LINE_BYTES = tail_line_bytes(0, None, None) - 1  # without the index's digits


def _max_level(total: int) -> int:
    return max(total, 1).bit_length()


async def erase_indexes(
    session: AsyncSession, chat_id: int, indexes: Iterable[int], now: datetime
) -> ErasureReport:
    wanted = sorted(set(indexes))
    report = ErasureReport()
    if not wanted:
        return report
    state = await _lock_row(session, chat_id)
    total = int(await session.scalar(select(Chat.next_index).where(Chat.id == chat_id)) or 0)
    erased = list(
        (
            await session.scalars(
                update(Message)
                .where(Message.chat_id == chat_id, Message.idx.in_(wanted), Message.erased_at.is_(None))
                .values(
                    text=None,
                    author_id=None,
                    author_name=None,
                    attachments=None,
                    mention_ids=None,
                    mention_names=None,
                    is_bot=False,
                    edited_at=None,
                    erased_at=now,
                    # The raw-tail line of an erased slot is "#i time (erased)": keep the byte
                    # count true, in this UPDATE (a second one wrote every row version again:
                    # six more index entries each, three of them GIN).
                    line_bytes=_ERASED_LINE_BYTES + func.octet_length(cast(Message.idx, Text)),
                )
                .returning(Message.idx)
            )
        ).all()
    )
    if not erased:
        return report
    leaves = set(
        (
            await session.scalars(
                select(TreeNode.idx).where(
                    TreeNode.chat_id == chat_id, TreeNode.level == 0, TreeNode.idx.in_(erased)
                )
            )
        ).all()
    )
    report.messages = len(erased)
    report.nodes = await delete_covering(session, chat_id, erased, _max_level(total))
    # An erased message is an empty, free leaf: put back the ones that existed right away.
    rows = await session.execute(
        select(Message.idx, Message.created_at).where(Message.chat_id == chat_id, Message.idx.in_(leaves))
    )
    times = {int(idx): created for idx, created in rows}
    await insert_nodes(
        session, chat_id, [NodeWrite((0, i), "", times[i], times[i], by_model=False) for i in leaves]
    )
    report.nodes -= len(leaves)
    if state is not None:
        state.version += 1
        state.needs_repair = True
        state.staged_ready = False
    if report.nodes + len(leaves):
        await drop_cards(session, [chat_id])  # lines held the erased words: so may the cards
    return report


async def erase_snowflakes(
    session: AsyncSession, chat_id: int, snowflakes: Iterable[int], now: datetime
) -> ErasureReport:
    ids = list(set(snowflakes))
    if not ids:
        return ErasureReport()
    indexes = (
        await session.scalars(
            select(Message.idx).where(Message.chat_id == chat_id, Message.snowflake.in_(ids))
        )
    ).all()
    return await erase_indexes(session, chat_id, indexes, now)


async def erase_author(
    session: AsyncSession, chat_ids: Iterable[int], author_id: int, now: datetime, names: Iterable[str] = ()
) -> ErasureReport:
    """Every message of one person in the given chats (their guild's chats, or a DM), the bot's
    replies to those messages and its messages quoting them, their name in the other messages
    of those chats that mention them (memory/privacy/mention_erasure.py), and every name they were
    shown under (and ``names``, what the caller knows them by) in the bot's other messages
    (memory/privacy/bot_words.py)."""
    chat_ids = list(chat_ids)
    known = await person_names(session, chat_ids, author_id) | set(names)
    report = ErasureReport()
    for chat_id in chat_ids:
        theirs = (
            await session.execute(
                select(Message.idx, Message.text).where(
                    Message.chat_id == chat_id, Message.author_id == author_id
                )
            )
        ).all()
        if theirs:
            indexes = [int(idx) for idx, _ in theirs]
            replies = await bot_replies(session, chat_id, indexes)
            texts = [text for _, text in theirs if text]
            replies += await bot_quotes(session, chat_id, texts, min(indexes), skip=replies)
            part = await erase_indexes(session, chat_id, [*indexes, *replies], now)
            part.replies = len(replies)
            part.messages -= len(replies)
            report.add(part)
            report.chats += 1
    scrubbed, lines = await scrub_mentions(session, chat_ids, author_id)
    report.mentions += scrubbed
    report.nodes += lines
    report.names, lines = await redact_bot_messages(session, chat_ids, known)
    report.nodes += lines
    await drop_cards_about(session, chat_ids, author_id, known)
    return report


async def set_backfill_floor(session: AsyncSession, chat_ids: Iterable[int], moment: int) -> None:
    """No later backfill of these chats starts below ``moment`` (an erasure's, as a snowflake):
    the history before it was handled before the erasure committed."""
    ids = list(chat_ids)
    if ids:
        await session.execute(
            update(Chat)
            .where(Chat.id.in_(ids), Chat.discord_id.is_not(None))
            .values(backfill_floor=func.greatest(Chat.backfill_floor, moment))
        )


async def wipe_chat(
    session: AsyncSession, chat_id: int, erased_before: Callable[[], int | None] | None = None
) -> ErasureReport:
    """Forget a chat's whole memory but keep the chat (its settings, such as paused).
    ``erased_before``: the wipe's moment (a Discord snowflake), asked for at the end of the
    transaction: a message older than it is never logged again (memory.storage.log.append_replies)."""
    # The chat row first, the lock every append takes: an append in flight commits before this
    # wipe reads the log (and is erased with it), or waits and then sees erased_before.
    await session.execute(select(Chat.id).where(Chat.id == chat_id).with_for_update())
    state = await _lock_row(session, chat_id)
    messages = len(
        (
            await session.execute(delete(Message).where(Message.chat_id == chat_id).returning(Message.idx))
        ).all()
    )
    nodes = len(
        (
            await session.execute(delete(TreeNode).where(TreeNode.chat_id == chat_id).returning(TreeNode.idx))
        ).all()
    )
    moment = erased_before() if erased_before is not None else None
    since: object = Chat.erased_before if moment is None else func.greatest(Chat.erased_before, moment)
    await session.execute(
        update(Chat)
        .where(Chat.id == chat_id)
        .values(next_index=0, last_message_at=None, backfill_floor=None, erased_before=since)
    )
    await drop_cards(session, [chat_id])
    if state is not None:
        state.shown, state.boundary, state.staged, state.staged_boundary = [], 0, None, None
        state.batch_target, state.needs_repair, state.staged_ready = None, False, False
        state.version += 1
    return ErasureReport(messages=messages, nodes=nodes, chats=1)


async def delete_chats(session: AsyncSession, chat_ids: Iterable[int]) -> ErasureReport:
    """The channel, thread or guild is gone: its memory goes with it (cascade)."""
    report = ErasureReport()
    for chat_id in chat_ids:
        report.add(await wipe_chat(session, chat_id))
        await session.execute(delete(Chat).where(Chat.id == chat_id))
    return report


async def edit_message(
    session: AsyncSession,
    chat_id: int,
    snowflake: int,
    content: str,
    attachments: tuple[str, ...],
    edited_at: datetime,
    names: MentionNames | None = None,
) -> int | None:
    """Replace a message's text with a new version; returns the number of lines deleted for
    rebuilding, or None when the message is not logged (or erased).

    ``content`` is the version as Discord shows it (raw ``<@id>`` mentions), ``names`` what its
    ids are called; it is rendered here, with the row locked, by the rules of a sealed message
    (memory/text/mentions.py): a person the erasure took out of it stays ``@unknown-user``, whatever
    an erasure committed just before this edit. A bot's message that differs only where
    ``@unknown-user`` stands keeps its logged text (its plain-text names cannot be found again).
    """
    # The memory row first, then the message, as an erasure takes them: the edit and an
    # erasure of a person it mentions run one after the other, and never deadlock.
    state = await _lock_row(session, chat_id)
    m = await session.scalar(
        select(Message).where(Message.chat_id == chat_id, Message.snowflake == snowflake).with_for_update()
    )
    if m is None or m.erased_at is not None or m.author_name is None:
        return None
    was_sealed = sealed(m.text)
    lookup = names_for_version(
        content, names or MentionNames(), was_sealed=was_sealed, kept_ids=m.mention_ids or ()
    )
    rendered = render_mentions(content, lookup)
    # as the append stores them: every column storable (memory/storage/log.py)
    mentions = (rendered.mention_ids, rendered.mention_names)
    words = stored_words(rendered.text, attachments, m.reply_to, mentions)
    if words.text == m.text or (was_sealed and m.is_bot and same_but_redacted(m.text or "", words.text)):
        return 0
    m.mention_ids, m.mention_names = words.mention_ids, words.mention_names
    m.text, m.attachments, m.edited_at = words.text, words.attachments, edited_at
    m.line_bytes = tail_line_bytes(m.idx, m.author_name, words.text)
    return await drop_lines_over(session, {chat_id: [m.idx]}, {chat_id: state} if state else {})


# The tables whose old row versions can hold message text (messages, nodes) or a channel's
# or person's name (chats), and the people cards built from the lines (people_cards).
PURGED_TABLES = ("messages", "nodes", "chats", "people_cards")


async def purge_dead_rows(engine: AsyncEngine) -> None:
    """Make PostgreSQL drop the old versions of erased and edited rows from the table files.

    An UPDATE or DELETE leaves the old row version in its heap page until VACUUM removes it,
    and autovacuum waits for 20% of a table to be dead: on a big chat log, months. VACUUM
    cannot run inside a transaction, hence the autocommit connection. SKIP_LOCKED: a table
    another VACUUM holds is skipped (that one removes the same rows). Index cleanup is left
    to PostgreSQL's own choice (it skips it when few pages have dead rows), so this costs a
    scan of the pages that changed since the last VACUUM. See docs/security.md for what the
    database files may still hold afterwards (WAL, full-text index keys).
    """
    async with engine.connect() as conn:
        autocommit = await conn.execution_options(isolation_level="AUTOCOMMIT")
        # The sessions' statement timeout (memory/storage/database.py) is for a unit of work; a VACUUM
        # of a big table may rightly take longer. RESET puts the session's own value back.
        await autocommit.execute(text("SET statement_timeout = 0"))
        try:
            await autocommit.execute(text(f"VACUUM (SKIP_LOCKED) {', '.join(PURGED_TABLES)}"))
        finally:
            await autocommit.execute(text("RESET statement_timeout"))
