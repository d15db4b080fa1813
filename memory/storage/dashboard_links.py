"""The dashboard's one-time sign-in links (table ``dashboard_links``).

A link's secret is 32 random bytes shown once (in the link); the table keeps only its SHA-256,
so neither a database dump nor a log can sign anyone in. Redeeming is one UPDATE ... WHERE
used_at IS NULL AND expires_at > now: two browsers opening the same link race on the row
lock and only one gets a session.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from memory.errors import UserFacingError
from memory.storage.models import DashboardLink

SECRET_BYTES = 32  # 256 bits: not guessable within a link's 10 minutes at any request rate
KEEP_USED = timedelta(days=1)  # spent and expired links are deleted a day later


class LinkRefused(UserFacingError):
    """A link that signs nobody in: unknown, used already, or expired (the message says which)."""


@dataclass(frozen=True, slots=True)
class LinkGrant:
    guild_id: int | None  # None: the host, every server
    user_id: int | None  # None: the host


def digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


async def create(
    session: AsyncSession, guild_id: int | None, user_id: int | None, now: datetime, ttl: timedelta
) -> str:
    """A new link's secret (shown once); old spent links are cleared on the way."""
    await session.execute(delete(DashboardLink).where(DashboardLink.expires_at < now - KEEP_USED))
    secret = secrets.token_urlsafe(SECRET_BYTES)
    session.add(
        DashboardLink(token_hash=digest(secret), guild_id=guild_id, user_id=user_id, expires_at=now + ttl)
    )
    await session.flush()
    return secret


async def redeem(session: AsyncSession, secret: str, now: datetime) -> LinkGrant:
    """Spend the link: who it signs in; LinkRefused when it is unknown, used or expired."""
    hashed = digest(secret)
    spent = await session.execute(
        update(DashboardLink)
        .where(
            DashboardLink.token_hash == hashed,
            DashboardLink.used_at.is_(None),
            DashboardLink.expires_at > now,
        )
        .values(used_at=now)
        .returning(DashboardLink.guild_id, DashboardLink.user_id)
    )
    row = spent.first()
    if row is not None:
        return LinkGrant(row[0], row[1])
    link = await session.scalar(select(DashboardLink).where(DashboardLink.token_hash == hashed))
    if link is None:
        raise LinkRefused("This sign-in link is not known; ask for a new one with /memory dashboard.")
    if link.used_at is not None:
        raise LinkRefused("This sign-in link was used already; each link works once.")
    raise LinkRefused("This sign-in link has expired (links last 10 minutes); ask for a new one.")


async def forget_user(session: AsyncSession, user_id: int) -> None:
    """A person's erasure (in any server): their links go, since they hold the person's id."""
    await session.execute(delete(DashboardLink).where(DashboardLink.user_id == user_id))
