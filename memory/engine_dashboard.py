"""The engine's methods for the web dashboard (bot/dashboard/): its sign-in links, a server's
chats, spend and erasures at a glance, the host's view of every server, the compactor's state
and the totals /metrics exports. A base of :class:`memory.engine.MemoryEngine`; each method is
one unit of work with its own session.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.clock import Clock
from memory.compaction.compactor import Compactor
from memory.config import MemoryConfig
from memory.policy.guild_policy import month_start
from memory.reading import dashboard, stats
from memory.reading.dashboard import ChatLine, DayCount, DaySpend, ServerLine, Totals
from memory.reading.stats import ChatStats
from memory.storage import dashboard_links
from memory.storage.dashboard_links import LinkGrant

LINK_TTL = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class ServerOverview:
    chats: list[ChatLine]
    days: list[DaySpend]  # this month, by day
    spent: Decimal  # this month


@dataclass(frozen=True, slots=True)
class HostOverview:
    servers: list[ServerLine]
    dm_chats: int
    dm_messages: int
    totals: Totals


@dataclass(frozen=True, slots=True)
class FailureKind:
    kind: str
    count: int
    last_at: datetime


@dataclass(frozen=True, slots=True)
class CompactorOverview:
    chats: list[ChatStats]
    built: dict[int, int]  # chat id -> built lines
    failures: list[FailureKind]  # of this server's chats, in this process, most recent first
    channels: dict[int, int | None] = field(default_factory=dict)  # chat id -> its channel's id


@dataclass(frozen=True, slots=True)
class PrivacyOverview:
    erasures: list[DayCount]  # erased messages by day, newest first
    opt_outs: int


class EngineDashboard:
    """The dashboard's half of the engine; a base of MemoryEngine, never used alone."""

    sessions: async_sessionmaker[AsyncSession]
    config: MemoryConfig
    clock: Clock
    compactor: Compactor | None

    async def new_dashboard_link(self, guild_id: int | None, user_id: int | None) -> str:
        """A one-time sign-in secret for a member of ``guild_id`` (None, None: the host),
        valid 10 minutes; only its hash is stored."""
        async with self.sessions() as s, s.begin():
            return await dashboard_links.create(s, guild_id, user_id, self.clock.now(), LINK_TTL)

    async def redeem_dashboard_link(self, secret: str) -> LinkGrant:
        """Spend a sign-in secret: whom it signs in; LinkRefused (one sentence) when it cannot."""
        async with self.sessions() as s, s.begin():
            return await dashboard_links.redeem(s, secret, self.clock.now())

    async def server_overview(self, guild_id: int, timezone: str) -> ServerOverview:
        since = month_start(self.clock.now(), timezone)
        async with self.sessions() as s:
            chats = await dashboard.server_chats(s, guild_id)
            days = await dashboard.spend_per_day(s, guild_id, since, timezone)
        spent = sum((d.reply + d.compact for d in days), Decimal(0))
        return ServerOverview(chats, days, spent)

    async def server_chat_ids(self, guild_id: int) -> set[int]:
        """The chats a server's pages may show (never a DM)."""
        async with self.sessions() as s:
            return {c.chat_id for c in await dashboard.server_chats(s, guild_id)}

    async def compactor_overview(self, guild_id: int) -> CompactorOverview:
        now = self.clock.now()
        async with self.sessions() as s:
            chats = await dashboard.server_chats(s, guild_id)
            ids = [c.chat_id for c in chats]
            figures = [await stats.chat_stats(s, chat_id, now, self.config) for chat_id in ids]
            built = await dashboard.built_lines(s, ids)
        mine = [f for f in (self.compactor.failures if self.compactor else ()) if f.chat_id in set(ids)]
        counts = Counter(f.kind for f in mine)
        last = {f.kind: f.at for f in mine}
        kinds = [FailureKind(kind, counts[kind], last[kind]) for kind in counts]
        failures = sorted(kinds, key=lambda k: k.last_at, reverse=True)
        return CompactorOverview(figures, built, failures, {c.chat_id: c.discord_id for c in chats})

    async def privacy_overview(self, guild_id: int, timezone: str) -> PrivacyOverview:
        async with self.sessions() as s:
            return PrivacyOverview(
                await dashboard.erasures_per_day(s, guild_id, timezone),
                await dashboard.opt_out_count(s, guild_id),
            )

    async def host_overview(self) -> HostOverview:
        now = self.clock.now()
        async with self.sessions() as s:
            servers = await dashboard.servers(s, month_start(now, self.config.timezone))
            dm_chats, dm_messages = await dashboard.dm_counts(s)
            totals = await dashboard.totals(s, self.config, now)
        return HostOverview(servers, dm_chats, dm_messages, totals)

    async def totals(self) -> Totals:
        """What /metrics exports from the database."""
        async with self.sessions() as s:
            return await dashboard.totals(s, self.config, self.clock.now())
