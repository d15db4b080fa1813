"""The log's side of reconciliation with the platform the chat lives on (docs/design.md,
reliability): which logged messages a page of history should be compared with, and the
per-chat cursor of the slow background walk. Plain ids and times only; the bot decides
what a page says (bot/gateway/reconcile.py).

A logged message is compared by a digest of its text, not by its edit time: the log
stores the time an edit was *seen*, and an embed title can change without an edit time.
PostgreSQL's ``md5(text)`` and :func:`text_digest` agree byte for byte (UTF-8), so the text
itself never leaves the database for a comparison, with one exception: a bot's message that
shows ``@unknown-user`` (a person was taken out of its plain-text words, which no id marks)
is compared by its text (memory/text/mentions.py, ``same_but_redacted``). With each message come
the ids it still names, the names it shows for them and whether it is sealed, so the page is
rendered with the log's own names (Discord's REST history may name a member by username where
the live event gave the nickname) and a person an erasure took out is not read as an edit.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import DateTime, case, func, literal, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.storage.models import Chat, Message, ReconcileCursor
from memory.text.mentions import UNKNOWN_USER

PAGE = 100  # messages per page of history: Discord's most per request
# Chats whose history lives on Discord (imports have none; their guild id, if any, is only a label).
LIVE_KINDS = ("text", "thread", "dm")


@dataclass(frozen=True, slots=True)
class LoggedMessage:
    snowflake: int
    digest: str  # md5 of the logged text, hex
    reply_to: int | None  # the log index it replies to: part of the text as the memory sees it
    mention_ids: tuple[int, ...] = ()  # the people it still names
    mention_names: tuple[str, ...] = ()  # and the name it shows for each ("" where raw)
    sealed: bool = False  # it shows @unknown-user: someone was taken out of it
    is_bot: bool = False
    text: str | None = None  # only for a sealed bot message (see the module docstring)


def text_digest(body: str) -> str:
    return hashlib.md5(body.encode("utf-8"), usedforsecurity=False).hexdigest()


async def logged_after(
    session: AsyncSession, chat_id: int, after: int, until: int | None
) -> list[LoggedMessage]:
    """Logged, not erased messages with a snowflake in ``(after, until]`` (``until`` None: no
    end), oldest first. The unique (chat, snowflake) index serves the range."""
    shows_unknown = func.strpos(Message.text, UNKNOWN_USER) > 0
    query = (
        select(
            Message.snowflake,
            func.md5(Message.text),
            Message.reply_to,
            Message.mention_ids,
            Message.mention_names,
            shows_unknown,
            Message.is_bot,
            case((shows_unknown & Message.is_bot, Message.text)),
        )
        .where(
            Message.chat_id == chat_id,
            Message.snowflake > after,
            Message.erased_at.is_(None),
            Message.text.is_not(None),
        )
        .order_by(Message.snowflake)
    )
    if until is not None:
        query = query.where(Message.snowflake <= until)
    rows = await session.execute(query)
    return [
        LoggedMessage(int(s), str(d), r, tuple(ids or ()), _names(ids, names), bool(sealed), bool(bot), text)
        for s, d, r, ids, names, sealed, bot, text in rows
        if s is not None
    ]


def _names(ids: list[int] | None, names: list[str] | None) -> tuple[str, ...]:
    """One name per id (a row written otherwise must not fail a comparison)."""
    count = len(ids or ())
    return tuple(([*(names or ())] + [""] * count)[:count])


async def last_message_times(session: AsyncSession, chat_ids: list[int]) -> dict[int, datetime | None]:
    """When each chat's newest logged message was written: the bot was connected then, so the
    outage it is coming back from started later (the reconnect window starts from here)."""
    if not chat_ids:
        return {}
    rows = await session.execute(select(Chat.id, Chat.last_message_at).where(Chat.id.in_(chat_ids)))
    return {int(chat_id): at for chat_id, at in rows}


async def live_guild_ids(session: AsyncSession) -> set[int]:
    """Guilds the bot logs channels of (not guild ids that imported chats carry as a label)."""
    rows = await session.scalars(
        select(Chat.guild_id)
        .where(Chat.guild_id.is_not(None), Chat.discord_id.is_not(None), Chat.kind.in_(("text", "thread")))
        .distinct()
    )
    return {int(g) for g in rows.all() if g is not None}


# --- the background walk's cursor


def next_due(
    now: datetime, walk_started_at: datetime, period: timedelta, messages: int, finished: bool
) -> datetime:
    """When the next page of a chat's walk is due: the walk spreads its pages evenly over
    ``period`` (a chat of 1,000,000 messages at 30 days: one page every 259 s; a chat of 50
    messages: one page, then nothing until the period is over)."""
    if finished:
        return max(now, walk_started_at + period)
    pages = max(1, math.ceil(messages / PAGE))
    return now + period / pages


@dataclass(frozen=True, slots=True)
class DueWalk:
    chat_id: int
    after: int  # snowflake, exclusive: where the walk is


async def ensure_cursors(session: AsyncSession, now: datetime) -> None:
    """A cursor for every chat that lives on Discord, due at once (new chats, and every chat
    the first time this runs). One anti-join over the chats table, which is small."""
    missing = select(Chat.id, literal(now, DateTime(timezone=True))).where(
        Chat.discord_id.is_not(None),
        Chat.kind.in_(LIVE_KINDS),
        ~select(ReconcileCursor.chat_id).where(ReconcileCursor.chat_id == Chat.id).exists(),
    )
    await session.execute(
        insert(ReconcileCursor).from_select(["chat_id", "due_at"], missing).on_conflict_do_nothing()
    )


async def claim_due(session: AsyncSession, now: datetime, lease: timedelta, limit: int) -> list[DueWalk]:
    """Walks with a page due, oldest due first; each is pushed back by ``lease`` so that a page
    waiting in a channel's queue is not queued again by the next tick (it resets the time
    when it is done; a lost one runs again after the lease)."""
    rows = (
        await session.execute(
            select(ReconcileCursor.chat_id, ReconcileCursor.walk_after)
            .where(ReconcileCursor.due_at <= now)
            .order_by(ReconcileCursor.due_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
    ).all()
    ids = [int(chat_id) for chat_id, _ in rows]
    if ids:
        await session.execute(
            update(ReconcileCursor).where(ReconcileCursor.chat_id.in_(ids)).values(due_at=now + lease)
        )
    return [DueWalk(int(chat_id), int(after)) for chat_id, after in rows]


async def walk_page_done(
    session: AsyncSession, chat_id: int, next_after: int | None, now: datetime, period: timedelta
) -> None:
    """A page of the walk was compared: move the cursor (``next_after`` None: the walk reached
    the end of the history) and set when the next page is due."""
    cursor = await session.get(ReconcileCursor, chat_id, with_for_update=True)
    messages = await session.scalar(select(Chat.next_index).where(Chat.id == chat_id))
    if cursor is None or messages is None:
        return  # the chat was erased meanwhile
    started = cursor.walk_started_at or now
    finished = next_after is None
    cursor.due_at = next_due(now, started, period, int(messages), finished)
    if finished:
        cursor.walk_after, cursor.walk_started_at, cursor.history_reconciled_at = 0, None, now
    else:
        cursor.walk_after, cursor.walk_started_at = int(next_after), started  # type: ignore[arg-type]


async def recent_done(session: AsyncSession, chat_id: int, now: datetime) -> None:
    """The window around an outage was compared."""
    if await session.get(Chat, chat_id) is None:
        return
    await session.execute(
        insert(ReconcileCursor)
        .values(chat_id=chat_id, due_at=now, recent_reconciled_at=now)
        .on_conflict_do_update(index_elements=[ReconcileCursor.chat_id], set_={"recent_reconciled_at": now})
    )


@dataclass(frozen=True, slots=True)
class ReconcileState:
    recent_at: datetime | None  # the window around the last reconnect
    history_at: datetime | None  # the last complete walk over the whole history
    walking: bool  # a walk is under way


async def reconcile_state(session: AsyncSession, chat_id: int) -> ReconcileState:
    cursor = await session.get(ReconcileCursor, chat_id)
    if cursor is None:
        return ReconcileState(None, None, False)
    return ReconcileState(cursor.recent_reconciled_at, cursor.history_reconciled_at, cursor.walk_after > 0)
