"""Limits in time kept in the database (table ``rate_marks``), so that a restart or a second
process does not reset them: one export of a person an hour, one unprompted reply in a
channel per JOIN_IN_COOLDOWN. A claim is one statement, so two processes cannot both win it."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.storage.models import RateMark

EXPORT = "export"  # scope: the person
JOIN_IN = "join_in"  # scope: the channel


async def wait_of(s: AsyncSession, kind: str, scope: int, every: timedelta, now: datetime) -> float:
    """Seconds until ``kind`` may happen again in ``scope`` (0: now)."""
    at = await s.scalar(select(RateMark.at).where(RateMark.kind == kind, RateMark.scope == scope))
    if at is None:
        return 0.0
    return max(0.0, (at + every - now).total_seconds())


async def claim(s: AsyncSession, kind: str, scope: int, every: timedelta, now: datetime) -> bool:
    """Mark that ``kind`` happens now in ``scope``; False (and nothing changed) when the last
    time was less than ``every`` ago."""
    stmt = insert(RateMark).values(kind=kind, scope=scope, at=now)
    done = await s.execute(
        stmt.on_conflict_do_update(
            index_elements=[RateMark.kind, RateMark.scope],
            set_={"at": now},
            where=RateMark.at <= now - every,
        ).returning(RateMark.scope)
    )
    return done.first() is not None


async def forget_person(s: AsyncSession, person: int) -> None:
    """An erased person leaves no mark: their export's time names them."""
    await s.execute(delete(RateMark).where(RateMark.kind == EXPORT, RateMark.scope == person))
