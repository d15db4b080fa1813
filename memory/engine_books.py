"""The engine's bookkeeping methods: the usage ledger, statistics, the reconcile cursors and the
health probe. A base of :class:`memory.engine.MemoryEngine` (which adds the log, the tree and
erasure), so each file stays one concern; callers see one engine.

Each method is one unit of work with its own session and transaction.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal

from sqlalchemy import distinct, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.clock import Clock
from memory.config import MemoryConfig
from memory.policy import ledger
from memory.policy.guild_policy import month_start
from memory.policy.ledger import UsageKind, UsageSummary
from memory.pricing import PriceTable, Usage
from memory.privacy import reconcile
from memory.privacy.reconcile import DueWalk, LoggedMessage, ReconcileState
from memory.reading import stats
from memory.reading.stats import ChatStats, NodeDetail
from memory.storage.models import Chat, UsageEntry


class EngineBooks:
    """The engine's bookkeeping half: the usage ledger, statistics, the reconcile cursors and
    the health probe; a base of MemoryEngine, never used alone."""

    sessions: async_sessionmaker[AsyncSession]
    config: MemoryConfig
    clock: Clock

    def month_start(self, now: datetime) -> datetime:
        """The 1st of ``now``'s month in the configured zone: the one "this month" of the
        monthly reply cap, the budgets, `/memory status` and `eva stats`."""
        return month_start(now, self.config.timezone)

    # --- the usage ledger
    async def record_usage(
        self,
        *,
        chat_id: int | None,
        guild_id: int | None,
        kind: UsageKind,
        model: str,
        usages: Sequence[Usage],
        prices: PriceTable,
    ) -> None:
        """Every model call of one turn in ONE transaction: the ledger's ``created_at`` is
        PostgreSQL's ``now()``, the transaction's start, so the rows of one turn share it and
        :meth:`reply_turns_since` counts turns, not calls."""
        if not usages:
            return
        async with self.sessions() as s, s.begin():
            for usage in usages:
                await ledger.record_usage(
                    s, chat_id=chat_id, guild_id=guild_id, kind=kind, model=model, usage=usage, prices=prices
                )

    async def reply_turns_since(self, guild_id: int, since: datetime) -> int:
        """Reply turns recorded for ``guild_id`` since ``since`` (the (guild_id, created_at) index)."""
        async with self.sessions() as s:
            count = await s.scalar(
                select(func.count(distinct(UsageEntry.created_at))).where(
                    UsageEntry.guild_id == guild_id,
                    UsageEntry.kind == "reply",
                    UsageEntry.created_at >= since,
                )
            )
        return int(count or 0)

    async def cost_by_chat(self, since: datetime | None = None) -> dict[int | None, Decimal]:
        """USD at list price per chat since ``since`` (None key: chats since deleted)."""
        async with self.sessions() as s:
            return await ledger.cost_by_chat(s, since=since)

    async def usage_summary(self, chat_id: int) -> UsageSummary:
        """The chat's model usage and cost, all time."""
        async with self.sessions() as s:
            return await ledger.usage_summary(s, chat_id=chat_id)

    # --- statistics
    async def chat_stats(self, chat_id: int, now: datetime) -> ChatStats:
        """The figures `/memory status` and `eva stats` show about one chat."""
        async with self.sessions() as s:
            return await stats.chat_stats(s, chat_id, now, self.config)

    async def node_detail(self, chat_id: int, address: str) -> NodeDetail:
        """What `/memory node` shows about the line at ``address``."""
        async with self.sessions() as s:
            return await stats.node_detail(s, chat_id, address)

    async def chat_ids(self, *, active_since: datetime | None = None) -> list[int]:
        """Every chat, or those with a message logged since ``active_since``."""
        query = select(Chat.id)
        if active_since is not None:
            query = query.where(Chat.last_message_at >= active_since)
        async with self.sessions() as s:
            return list((await s.scalars(query)).all())

    # --- the reconcile cursors (bot/gateway/reconcile.py compares the log with Discord)
    async def logged_after(self, chat_id: int, after: int, until: int | None) -> list[LoggedMessage]:
        """Logged, not erased messages with a snowflake in ``(after, until]``, oldest first."""
        async with self.sessions() as s:
            return await reconcile.logged_after(s, chat_id, after, until)

    async def last_message_times(self, chat_ids: list[int]) -> dict[int, datetime | None]:
        """When each chat's newest logged message was written (where a reconnect window starts)."""
        async with self.sessions() as s:
            return await reconcile.last_message_times(s, chat_ids)

    async def live_guild_ids(self) -> set[int]:
        """Guilds the bot logs channels of (not the guild ids imports carry as a label)."""
        async with self.sessions() as s:
            return await reconcile.live_guild_ids(s)

    async def claim_due_walks(self, now: datetime, lease: timedelta, limit: int) -> list[DueWalk]:
        """Up to ``limit`` history walks with a page due, each leased for ``lease``."""
        async with self.sessions() as s, s.begin():
            await reconcile.ensure_cursors(s, now)
            return await reconcile.claim_due(s, now, lease, limit)

    async def walk_page_done(
        self, chat_id: int, next_after: int | None, now: datetime, period: timedelta
    ) -> None:
        """A page of a walk was compared: move its cursor and set when the next page is due."""
        async with self.sessions() as s, s.begin():
            await reconcile.walk_page_done(s, chat_id, next_after, now, period)

    async def recent_done(self, chat_id: int, now: datetime) -> None:
        """The window around an outage was compared for this chat."""
        async with self.sessions() as s, s.begin():
            await reconcile.recent_done(s, chat_id, now)

    async def reconcile_state(self, chat_id: int) -> ReconcileState:
        """When the chat was last reconciled, around an outage and over its whole history."""
        async with self.sessions() as s:
            return await reconcile.reconcile_state(s, chat_id)

    # --- health
    async def answers(self, seconds: float) -> bool:
        """Whether the database answers a `SELECT 1` within ``seconds`` (never raises)."""
        try:
            async with asyncio.timeout(seconds), self.sessions() as s:
                await s.execute(text("SELECT 1"))
            return True
        except Exception:
            return False
