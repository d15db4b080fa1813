"""Limits that protect the host's bill, each with one short message to show.

- Per-user cooldown (USER_COOLDOWN_SECONDS): one answered trigger per window. The first
  trigger refused in a window gets a "slow down" note, the rest of a mention storm get nothing,
  so a storm of 30 mentions costs one note, not 30 messages.
- Per-guild monthly reply cap (GUILD_MONTHLY_REPLY_CAP, 0 = off): reply turns this calendar
  month, counted from the usage ledger, so the count survives restarts and sees every process.
- Tool steps (TOOL_STEPS): model calls per turn; enforced by the turn loop (bot/turn.py).

How turns are counted from the ledger: every model call of one turn is written in ONE
transaction at the end of the turn (:func:`record_turn_usage`). The ledger's ``created_at``
defaults to PostgreSQL's ``now()``, which is the transaction's start time, so the rows of one
turn share it exactly and ``count(DISTINCT created_at)`` counts turns, not calls.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy import distinct, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.ledger import record_usage
from memory.models import UsageEntry
from memory.pricing import PriceTable, Usage

COOLDOWN_NOTE = "Slow down a little: one question every {seconds} seconds, please. I'm still reading along."
CAP_NOTE = (
    "I've used up this server's replies for the month, so I'll be quiet until the 1st. "
    "(The host can raise GUILD_MONTHLY_REPLY_CAP.)"
)
STEP_LIMIT_NOTE = (
    "I dug through my memory but ran out of steps before I found it. Ask me again, a bit more precisely?"
)
CLAUDE_DOWN_NOTE = "Sorry, I can't think right now. Try again in a minute?"
SOMETHING_BROKE_NOTE = "Something went wrong on my side. Try again in a minute?"
EMPTY_REPLY_NOTE = "Hm, I lost my train of thought. Ask me again?"

# Users remembered by the cooldown before old entries are dropped (each is ~100 bytes).
_COOLDOWN_PRUNE_AT = 10_000


class Verdict(enum.Enum):
    ALLOW = "allow"
    NOTE = "note"  # refused; say "slow down" once
    SILENT = "silent"  # refused; already said it this window


class Cooldown:
    """One answered trigger per user per ``seconds``; the window starts at the answered one."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._last: dict[int, datetime] = {}
        self._noted: set[int] = set()

    def check(self, user_id: int, now: datetime) -> Verdict:
        last = self._last.get(user_id)
        if self.seconds <= 0 or last is None or (now - last).total_seconds() >= self.seconds:
            self._last[user_id] = now
            self._noted.discard(user_id)
            if len(self._last) > _COOLDOWN_PRUNE_AT:
                self._prune(now)
            return Verdict.ALLOW
        if user_id in self._noted:
            return Verdict.SILENT
        self._noted.add(user_id)
        return Verdict.NOTE

    def note(self) -> str:
        return COOLDOWN_NOTE.format(seconds=f"{self.seconds:g}")

    def _prune(self, now: datetime) -> None:
        for user_id, at in list(self._last.items()):
            if (now - at).total_seconds() >= self.seconds:
                del self._last[user_id]
                self._noted.discard(user_id)


def month_start(now: datetime, timezone: str) -> datetime:
    """Midnight on the 1st of ``now``'s month in ``timezone`` (an aware datetime)."""
    local = now.astimezone(ZoneInfo(timezone))
    return local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


async def record_turn_usage(
    sessions: async_sessionmaker[AsyncSession],
    *,
    chat_id: int | None,
    guild_id: int | None,
    model: str,
    usages: Sequence[Usage],
    prices: PriceTable,
) -> None:
    """Every model call of one turn, in one transaction (see the module docstring)."""
    if not usages:
        return
    async with sessions() as session, session.begin():
        for usage in usages:
            await record_usage(
                session,
                chat_id=chat_id,
                guild_id=guild_id,
                kind="reply",
                model=model,
                usage=usage,
                prices=prices,
            )


async def replies_this_month(
    sessions: async_sessionmaker[AsyncSession], guild_id: int, now: datetime, timezone: str
) -> int:
    """Reply turns recorded for ``guild_id`` since the 1st of this month (uses the ledger's
    (guild_id, created_at) index)."""
    async with sessions() as session:
        count = await session.scalar(
            select(func.count(distinct(UsageEntry.created_at))).where(
                UsageEntry.guild_id == guild_id,
                UsageEntry.kind == "reply",
                UsageEntry.created_at >= month_start(now, timezone),
            )
        )
    return int(count or 0)


async def over_monthly_cap(
    sessions: async_sessionmaker[AsyncSession],
    *,
    cap: int,
    guild_id: int | None,
    now: datetime,
    timezone: str,
) -> bool:
    """True when the guild has used its monthly reply turns (never for DMs or with cap 0)."""
    if cap <= 0 or guild_id is None:
        return False
    return await replies_this_month(sessions, guild_id, now, timezone) >= cap
