"""Per-server settings in the database (table ``guild_settings``) and the spending they are
checked against, read from the usage ledger. One session per call; no Discord here.

Spending is the ledger's cost at list price, replies and compaction together: a server's is
every row with its guild id; the DMs' is every row of a DM chat; the host's is every row.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import distinct, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.policy import settings_audit
from memory.policy.guild_policy import Forecast, GuildChoices, day_start, forecast, month_start, pace_since
from memory.policy.settings_audit import Changer
from memory.storage.database import translates_storage_errors
from memory.storage.models import Chat, GuildSettings, UsageEntry
from memory.storage.search_config import set_guild_language

LIST_COLUMNS = (
    "reply_channels",
    "join_in_channels",
    "allow_roles",
    "block_roles",
    "allow_members",
    "block_members",
)
SCALAR_COLUMNS = (
    "reply_mode",
    "reply_to_name",
    "model",
    "timezone",
    "monthly_budget_usd",
    "alert_channel_id",
    "search_language",
)


def _choices(row: GuildSettings | None) -> GuildChoices:
    if row is None:
        return GuildChoices()
    return GuildChoices(
        reply_mode=row.reply_mode,
        reply_channels=frozenset(int(x) for x in row.reply_channels or ()),
        join_in_channels=frozenset(int(x) for x in row.join_in_channels or ()),
        reply_to_name=row.reply_to_name,
        allow_roles=frozenset(int(x) for x in row.allow_roles or ()),
        block_roles=frozenset(int(x) for x in row.block_roles or ()),
        allow_members=frozenset(int(x) for x in row.allow_members or ()),
        block_members=frozenset(int(x) for x in row.block_members or ()),
        model=row.model,
        timezone=row.timezone,
        monthly_budget_usd=row.monthly_budget_usd,
        alert_channel_id=row.alert_channel_id,
    )


@translates_storage_errors
class GuildSettingsStore:
    """Each server's own choices (time zone, budgets, who may talk to the bot) and the spending
    they are checked against; one per process, shared by the reply gate and the commands."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], default_timezone: str = "UTC") -> None:
        self.sessions = sessions
        self.default_timezone = default_timezone  # TIMEZONE: where a server's choice goes back to

    async def choices(self, guild_id: int) -> GuildChoices:
        async with self.sessions() as s:
            return _choices(await s.get(GuildSettings, guild_id))

    async def set(self, guild_id: int, by: Changer | None = None, **values: Any) -> None:
        """Set scalar choices (None = back to the host's default). A new time zone also moves
        the server's existing memories to it, so their dates read in the server's time. ``by``:
        who changes them, written to the audit list in the same transaction."""
        unknown = set(values) - set(SCALAR_COLUMNS)
        if unknown:
            raise ValueError(f"not a per-server setting: {sorted(unknown)}")
        async with self.sessions() as s, s.begin():
            stmt = insert(GuildSettings).values(guild_id=guild_id, **values)
            await s.execute(
                stmt.on_conflict_do_update(
                    index_elements=[GuildSettings.guild_id], set_={**values, "updated_at": func.now()}
                )
            )
            if "search_language" in values:  # every chat of the server re-indexed in this transaction
                await set_guild_language(s, guild_id, values["search_language"])
            if "timezone" in values:
                await s.execute(
                    update(Chat)
                    .where(Chat.guild_id == guild_id)
                    .values(timezone=values["timezone"] or self.default_timezone)
                )
            if by is not None:
                for name, value in values.items():
                    await settings_audit.record(s, guild_id, by, name, settings_audit.shown(value))

    async def change_list(
        self, guild_id: int, column: str, item: int, present: bool, by: Changer | None = None
    ) -> bool:
        """Add (``present``) or remove one id of a list; False when nothing changed. The row is
        locked while it changes, so two admins editing at once both land; ``by`` as in :meth:`set`."""
        if column not in LIST_COLUMNS:
            raise ValueError(f"not a per-server list: {column}")
        async with self.sessions() as s, s.begin():
            await s.execute(insert(GuildSettings).values(guild_id=guild_id).on_conflict_do_nothing())
            row = await s.get(GuildSettings, guild_id, with_for_update=True)
            assert row is not None
            items = [int(x) for x in getattr(row, column) or ()]
            if (item in items) == present:
                return False
            items = [*items, item] if present else [x for x in items if x != item]
            setattr(row, column, items)
            row.updated_at = func.now()
            if by is not None:
                change = f"{'+' if present else '-'}{item}"
                await settings_audit.record(s, guild_id, by, column, change)
            return True

    async def mark_month(self, guild_id: int, column: str, month: str) -> bool:
        """Record that this month's budget warning (or pause notice) went out; True only for
        the one caller that recorded it first (so it is sent once, also with two processes)."""
        if column not in ("budget_warned_month", "budget_paused_month"):
            raise ValueError(f"not a budget mark: {column}")
        async with self.sessions() as s, s.begin():
            await s.execute(insert(GuildSettings).values(guild_id=guild_id).on_conflict_do_nothing())
            marked = getattr(GuildSettings, column)
            done = await s.execute(
                update(GuildSettings)
                .where(GuildSettings.guild_id == guild_id, marked.is_distinct_from(month))
                .values({column: month})
                .returning(GuildSettings.guild_id)
            )
            return done.first() is not None

    async def audit(self, guild_id: int) -> list[settings_audit.AuditEntry]:
        """The newest changes of the server's settings, newest first."""
        async with self.sessions() as s:
            return await settings_audit.recent(s, guild_id)

    # --- spending (USD at list price)
    async def host_spent(self, now: datetime, timezone: str) -> Decimal:
        return await self._spent(since=month_start(now, timezone))

    async def dm_spent(self, now: datetime, timezone: str) -> Decimal:
        dm_chats = select(Chat.id).where(Chat.kind == "dm")
        # A reply row with neither chat nor guild is a DM's: one with a person who opted out (no
        # chat is kept) or whose DM chat was erased since (the ledger keeps the row, chat NULL).
        unkept = UsageEntry.chat_id.is_(None) & UsageEntry.guild_id.is_(None) & (UsageEntry.kind == "reply")
        return await self._spent(UsageEntry.chat_id.in_(dm_chats) | unkept, since=month_start(now, timezone))

    async def guild_forecast(self, guild_id: int, now: datetime, timezone: str) -> Forecast:
        """The server's spend this month and its total by the month's end at the recent pace."""
        return await self._forecast(now, timezone, UsageEntry.guild_id == guild_id)

    async def host_forecast(self, now: datetime, timezone: str) -> Forecast:
        return await self._forecast(now, timezone)

    async def _forecast(self, now: datetime, timezone: str, *conditions: Any) -> Forecast:
        since = month_start(now, timezone)
        in_pace = UsageEntry.created_at >= pace_since(now, since)
        month_cost = func.coalesce(func.sum(UsageEntry.cost_usd), 0)
        recent_cost = func.coalesce(func.sum(UsageEntry.cost_usd).filter(in_pace), 0)
        statement = select(month_cost, recent_cost).where(UsageEntry.created_at >= since, *conditions)
        async with self.sessions() as s:
            spent, paced = (await s.execute(statement)).one()
        return forecast(Decimal(spent or 0), Decimal(paced or 0), now, since)

    async def _spent(self, *conditions: Any, since: datetime) -> Decimal:
        async with self.sessions() as s:
            total = await s.scalar(
                select(func.coalesce(func.sum(UsageEntry.cost_usd), 0)).where(
                    UsageEntry.created_at >= since, *conditions
                )
            )
        return Decimal(total or 0)

    async def replies_today(self, chat_id: int, now: datetime, timezone: str) -> int:
        """Reply turns in one chat since midnight (a turn's ledger rows share one created_at,
        see bot/reply/limits.py)."""
        async with self.sessions() as s:
            count = await s.scalar(
                select(func.count(distinct(UsageEntry.created_at))).where(
                    UsageEntry.chat_id == chat_id,
                    UsageEntry.kind == "reply",
                    UsageEntry.created_at >= day_start(now, timezone),
                )
            )
        return int(count or 0)
