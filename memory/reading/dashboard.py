"""What the web dashboard shows that no command shows: a server's chats at a glance, its spend
per day, its erasures by day, every server at a glance for the host, and the totals /metrics
exports. Read-only; DM chats are never listed under a server (they have no guild) and the host
sees them as counts only. No query here reads message text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.config import MemoryConfig
from memory.storage.log import range_bytes
from memory.storage.models import Chat, MemoryRow, Message, OptOut, TreeNode, UsageEntry


@dataclass(frozen=True, slots=True)
class ChatLine:
    """One chat of a server on its overview."""

    chat_id: int
    name: str
    kind: str
    messages: int
    lines: int  # lines of its memory row
    last_message_at: datetime | None
    paused: bool
    discord_id: int | None = None  # its channel or thread: whose admins may read it is Discord's


@dataclass(frozen=True, slots=True)
class DaySpend:
    day: date
    reply: Decimal
    compact: Decimal


@dataclass(frozen=True, slots=True)
class ServerLine:
    """One server on the host's page."""

    guild_id: int
    chats: int
    messages: int
    spent: Decimal  # this month, USD at list price


@dataclass(frozen=True, slots=True)
class DayCount:
    day: date
    count: int


@dataclass(frozen=True, slots=True)
class UsageByKind:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: Decimal = Decimal(0)


@dataclass(frozen=True, slots=True)
class Totals:
    """Everything /metrics exports from the database, read at scrape time."""

    messages: int
    usage: dict[str, UsageByKind] = field(default_factory=dict)  # by kind: reply, compact
    backlog_messages: int = 0  # raw-tail messages of chats past TAIL_START, waiting for lines
    lag_seconds: float = 0.0  # age of the oldest of them


def server_chats_query(guild_id: int) -> Select[Chat]:
    # kind != 'dm' besides the guild: a DM chat has no guild, and an imported one may carry a
    # guild's id as a label; DMs must never appear on a server's page, whatever their columns.
    return select(Chat).where(Chat.guild_id == guild_id, Chat.kind != "dm")


async def server_chats(session: AsyncSession, guild_id: int) -> list[ChatLine]:
    chats = (await session.scalars(server_chats_query(guild_id).order_by(Chat.name, Chat.id))).all()
    rows = {
        r.chat_id: len(r.shown or ())
        for r in (
            await session.scalars(select(MemoryRow).where(MemoryRow.chat_id.in_([c.id for c in chats])))
        ).all()
    }
    return [
        ChatLine(
            c.id,
            c.name,
            c.kind,
            int(c.next_index),
            rows.get(c.id, 0),
            c.last_message_at,
            c.logging_paused,
            c.discord_id,
        )
        for c in chats
    ]


async def spend_per_day(session: AsyncSession, guild_id: int, since: datetime, tz: str) -> list[DaySpend]:
    """The server's cost per day since ``since`` (in ``tz``'s days), replies and compaction apart."""
    day = func.date(func.timezone(tz, UsageEntry.created_at))
    rows = await session.execute(
        select(day, UsageEntry.kind, func.sum(UsageEntry.cost_usd))
        .where(UsageEntry.guild_id == guild_id, UsageEntry.created_at >= since)
        .group_by(day, UsageEntry.kind)
        .order_by(day)
    )
    by_day: dict[date, dict[str, Decimal]] = {}
    for when, kind, cost in rows:
        by_day.setdefault(when, {})[kind] = Decimal(cost or 0)
    return [
        # A keep-warm ping is part of what replies cost (bot/core/keep_warm.py).
        DaySpend(
            when,
            costs.get("reply", Decimal(0)) + costs.get("keep_warm", Decimal(0)),
            costs.get("compact", Decimal(0)),
        )
        for when, costs in sorted(by_day.items())
    ]


async def erasures_per_day(session: AsyncSession, guild_id: int, tz: str) -> list[DayCount]:
    """Erased log slots of the server's chats by the day they were erased: counts and days only.
    (A wiped or forgotten chat leaves no slots, so it is not counted here.)"""
    day = func.date(func.timezone(tz, Message.erased_at))
    chats = select(Chat.id).where(Chat.guild_id == guild_id, Chat.kind != "dm")
    rows = await session.execute(
        select(day, func.count())
        .where(Message.chat_id.in_(chats), Message.erased_at.is_not(None))
        .group_by(day)
        .order_by(day.desc())
    )
    return [DayCount(when, int(n)) for when, n in rows]


async def opt_out_count(session: AsyncSession, guild_id: int) -> int:
    return int(await session.scalar(select(func.count()).where(OptOut.guild_id == guild_id)) or 0)


async def servers(session: AsyncSession, since: datetime) -> list[ServerLine]:
    """Every server the memory holds chats of, with this month's spend."""
    chats = await session.execute(
        select(Chat.guild_id, func.count(), func.coalesce(func.sum(Chat.next_index), 0))
        .where(Chat.guild_id.is_not(None), Chat.kind != "dm")
        .group_by(Chat.guild_id)
    )
    spent = dict(
        (
            await session.execute(
                select(UsageEntry.guild_id, func.sum(UsageEntry.cost_usd))
                .where(UsageEntry.guild_id.is_not(None), UsageEntry.created_at >= since)
                .group_by(UsageEntry.guild_id)
            )
        ).all()
    )
    return sorted(
        (ServerLine(int(g or 0), int(n), int(m), Decimal(spent.get(g) or 0)) for g, n, m in chats),
        key=lambda s: s.guild_id,
    )


async def dm_counts(session: AsyncSession) -> tuple[int, int]:
    """DM chats and the messages they hold: numbers only, never whose or what."""
    row = await session.execute(
        select(func.count(), func.coalesce(func.sum(Chat.next_index), 0)).where(Chat.kind == "dm")
    )
    chats, messages = row.one()
    return int(chats), int(messages)


async def totals(session: AsyncSession, config: MemoryConfig, now: datetime) -> Totals:
    messages = int(await session.scalar(select(func.coalesce(func.sum(Chat.next_index), 0))) or 0)
    usage = {
        kind: UsageByKind(int(calls), int(i), int(o), int(r), int(w), Decimal(cost or 0))
        for kind, calls, i, o, r, w, cost in await session.execute(
            select(
                UsageEntry.kind,
                func.count(),
                func.coalesce(func.sum(UsageEntry.input_tokens), 0),
                func.coalesce(func.sum(UsageEntry.output_tokens), 0),
                func.coalesce(func.sum(UsageEntry.cache_read_tokens), 0),
                func.coalesce(func.sum(UsageEntry.cache_write_tokens + UsageEntry.cache_write_1h_tokens), 0),
                func.sum(UsageEntry.cost_usd),
            ).group_by(UsageEntry.kind)
        )
    }
    backlog, oldest = await _backlog(session, config)
    lag = max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0
    return Totals(messages, usage, backlog, lag)


async def _backlog(session: AsyncSession, config: MemoryConfig) -> tuple[int, datetime | None]:
    """Raw-tail messages of the chats whose tail passed TAIL_START (the compactor owes them
    lines), and when the oldest of them was written. One range sum per chat with a tail."""
    rows = (
        await session.execute(
            select(Chat.id, Chat.next_index, func.coalesce(MemoryRow.boundary, 0))
            .outerjoin(MemoryRow, MemoryRow.chat_id == Chat.id)
            .where(Chat.next_index > func.coalesce(MemoryRow.boundary, 0))
        )
    ).all()
    waiting, oldest = 0, None
    for chat_id, total, boundary in rows:
        if await range_bytes(session, chat_id, boundary) <= config.tail_start:
            continue
        waiting += int(total) - int(boundary)
        first = await session.scalar(
            select(Message.created_at).where(Message.chat_id == chat_id, Message.idx == boundary)
        )
        if first is not None and (oldest is None or first < oldest):
            oldest = first
    return waiting, oldest


async def built_lines(session: AsyncSession, chat_ids: list[int]) -> dict[int, int]:
    """Built lines (tree nodes) per chat."""
    rows = await session.execute(
        select(TreeNode.chat_id, func.count())
        .where(TreeNode.chat_id.in_(chat_ids))
        .group_by(TreeNode.chat_id)
    )
    return {int(c): int(n) for c, n in rows}
