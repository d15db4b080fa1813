"""The usage ledger: one row per model call with its cost at list price, and sums for stats.

Every model call is recorded (docs/design.md section 9): chat, kind, model, the token counters and
the cost from the price table in settings. Rows are written in the caller's transaction (the
caller commits), so a reply turn or a node build and its cost land together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.pricing import PriceTable, Usage
from memory.storage.models import UsageEntry

# join_in: the check of a join-in channel; cards: the people cards (memory/compaction/cards.py);
# keep_warm: a quiet chat's prompt read again to keep it cached (bot/core/keep_warm.py)
UsageKind = Literal["reply", "compact", "join_in", "cards", "keep_warm"]

# The ledger's cost column is NUMERIC(14, 8): whole 1e-8 USD. A Haiku 5.5 cache write costs
# 1.25e-7 USD a token, so one row can lose up to 0.5e-8 USD to rounding: $0.005 per million rows.
COST_QUANTUM = Decimal("0.00000001")


async def record_usage(
    session: AsyncSession,
    *,
    chat_id: int | None,
    guild_id: int | None,
    kind: UsageKind,
    model: str,
    usage: Usage,
    prices: PriceTable,
) -> Decimal:
    """Add one ledger row (``chat_id`` is ``chats.id``); return its cost as stored, in USD.

    The caller commits. An unknown model is recorded at cost 0, so it shows up in stats.
    """
    cost = add_usage(
        session, chat_id=chat_id, guild_id=guild_id, kind=kind, model=model, usage=usage, prices=prices
    )
    await session.flush()
    return cost


def add_usage(
    session: AsyncSession,
    *,
    chat_id: int | None,
    guild_id: int | None,
    kind: UsageKind,
    model: str,
    usage: Usage,
    prices: PriceTable,
) -> Decimal:
    """record_usage without the flush: the row goes with the session's next flush or commit
    (the compactor adds the rows of several calls, then writes them in one statement)."""
    cost = prices.cost(model, usage).quantize(COST_QUANTUM, rounding=ROUND_HALF_UP)
    session.add(
        UsageEntry(
            chat_id=chat_id,
            guild_id=guild_id,
            kind=kind,
            model=model,
            input_tokens=usage.input_tokens,
            cache_write_tokens=usage.cache_write_5m_tokens,
            cache_write_1h_tokens=usage.cache_write_1h_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=cost,
        )
    )
    return cost


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Sums over a set of ledger rows."""

    calls: int = 0
    input_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)

    @property
    def cache_write_tokens(self) -> int:
        return self.cache_write_5m_tokens + self.cache_write_1h_tokens

    @property
    def prompt_tokens(self) -> int:
        """Every input token, wherever it was billed: input + cache writes + cache reads."""
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens

    @property
    def cache_read_share(self) -> float | None:
        """Share of prompt tokens read from the cache; None when there were none."""
        prompt = self.prompt_tokens
        return self.cache_read_tokens / prompt if prompt else None

    def __add__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            cache_write_5m_tokens=self.cache_write_5m_tokens + other.cache_write_5m_tokens,
            cache_write_1h_tokens=self.cache_write_1h_tokens + other.cache_write_1h_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )


@dataclass(frozen=True, slots=True)
class UsageSummary:
    """Ledger sums by kind ("reply", "compact"); a kind with no rows is absent."""

    by_kind: dict[str, UsageTotals] = field(default_factory=dict)

    def kind(self, kind: str) -> UsageTotals:
        return self.by_kind.get(kind, UsageTotals())

    @property
    def total(self) -> UsageTotals:
        return sum(self.by_kind.values(), UsageTotals())

    @property
    def cache_read_share(self) -> float | None:
        """Of reply prompt tokens, the share read from cache (the prompt-caching figure)."""
        return self.kind("reply").cache_read_share


def _filters(chat_id: int | None, guild_id: int | None, since: datetime | None) -> list[Any]:
    conditions: list[Any] = []
    if chat_id is not None:
        conditions.append(UsageEntry.chat_id == chat_id)
    if guild_id is not None:
        conditions.append(UsageEntry.guild_id == guild_id)
    if since is not None:
        conditions.append(UsageEntry.created_at >= since)
    return conditions


async def usage_summary(
    session: AsyncSession,
    *,
    chat_id: int | None = None,
    guild_id: int | None = None,
    since: datetime | None = None,
) -> UsageSummary:
    """Sums of the rows matching every filter given (none: the whole ledger), by kind."""
    query = (
        select(
            UsageEntry.kind,
            func.count(),
            func.coalesce(func.sum(UsageEntry.input_tokens), 0),
            func.coalesce(func.sum(UsageEntry.cache_write_tokens), 0),
            func.coalesce(func.sum(UsageEntry.cache_write_1h_tokens), 0),
            func.coalesce(func.sum(UsageEntry.cache_read_tokens), 0),
            func.coalesce(func.sum(UsageEntry.output_tokens), 0),
            func.coalesce(func.sum(UsageEntry.cost_usd), 0),
        )
        .where(*_filters(chat_id, guild_id, since))
        .group_by(UsageEntry.kind)
    )
    by_kind: dict[str, UsageTotals] = {}
    for kind, calls, inputs, write_5m, write_1h, reads, outputs, cost in await session.execute(query):
        by_kind[kind] = UsageTotals(
            calls=int(calls),
            input_tokens=int(inputs),
            cache_write_5m_tokens=int(write_5m),
            cache_write_1h_tokens=int(write_1h),
            cache_read_tokens=int(reads),
            output_tokens=int(outputs),
            cost_usd=Decimal(cost),
        )
    return UsageSummary(by_kind)


async def cache_read_share(
    session: AsyncSession,
    *,
    chat_id: int | None = None,
    guild_id: int | None = None,
    since: datetime | None = None,
) -> float | None:
    """cache_read / (input + cache_write + cache_read) over reply calls; None with no reply rows."""
    summary = await usage_summary(session, chat_id=chat_id, guild_id=guild_id, since=since)
    return summary.cache_read_share


async def cost_by_chat(session: AsyncSession, *, since: datetime | None = None) -> dict[int | None, Decimal]:
    """USD at list price per ``chats.id`` (None: rows of chats since deleted), for `eva stats`."""
    query = select(UsageEntry.chat_id, func.sum(UsageEntry.cost_usd)).group_by(UsageEntry.chat_id)
    if since is not None:
        query = query.where(UsageEntry.created_at >= since)
    return {chat_id: Decimal(total or 0) for chat_id, total in await session.execute(query)}
