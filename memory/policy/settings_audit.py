"""The audit list of per-server setting changes (table ``settings_audit``): who (an id), when,
what. Written in the same transaction as the change itself (memory/policy/guild_settings.py),
so a change never lands without its entry. Names are never stored: the dashboard names a
person from Discord's cache when it shows the list, and a person's erasure blanks their id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Literal

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from memory.storage.models import SettingsAudit

Source = Literal["slash", "dashboard", "host"]
VALUE_CHARS = 200  # the column's width; values are ids, model names and zone names, far shorter
RECENT = 50  # entries the settings page shows


@dataclass(frozen=True, slots=True)
class Changer:
    """Who makes a change: a member's id (None: the host) and where they made it."""

    user_id: int | None
    source: Source


@dataclass(frozen=True, slots=True)
class AuditEntry:
    at: datetime
    user_id: int | None  # None: the host, or a person since erased
    source: str
    setting: str
    value: str


def shown(value: object) -> str:
    """A value as the audit list shows it: None is "default" (the host's), a budget in dollars."""
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, Decimal):
        return f"${value:.2f}"
    return str(value)[:VALUE_CHARS]


async def record(session: AsyncSession, guild_id: int, by: Changer, setting: str, value: str) -> None:
    session.add(
        SettingsAudit(guild_id=guild_id, user_id=by.user_id, source=by.source, setting=setting, value=value)
    )
    await session.flush()


async def recent(session: AsyncSession, guild_id: int, limit: int = RECENT) -> list[AuditEntry]:
    rows = await session.scalars(
        select(SettingsAudit)
        .where(SettingsAudit.guild_id == guild_id)
        .order_by(SettingsAudit.created_at.desc(), SettingsAudit.id.desc())
        .limit(limit)
    )
    return [AuditEntry(r.created_at, r.user_id, r.source, r.setting, r.value) for r in rows.all()]


async def forget_user(session: AsyncSession, user_id: int, guild_id: int | None = None) -> None:
    """A person's erasure (in one server, or everywhere): their changes stay listed, by nobody."""
    where = [SettingsAudit.user_id == user_id]
    if guild_id is not None:
        where.append(SettingsAudit.guild_id == guild_id)
    await session.execute(update(SettingsAudit).where(*where).values(user_id=None))


async def forget_guild(session: AsyncSession, guild_id: int) -> None:
    """The bot left the server: its audit list goes with its settings."""
    await session.execute(delete(SettingsAudit).where(SettingsAudit.guild_id == guild_id))
