"""`/memory status` and the monthly reply cap mean the same "this month": the 1st in the
configured zone (TIMEZONE), not in UTC. Near a month's turn the two differ by hours."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import memory
from bot.reply.limits import replies_this_month
from memory import ChatKey, MemoryConfig

# 20:00 UTC on 28 February is already 05:00 on 1 March in Tokyo (UTC+9).
NOW = datetime(2026, 2, 28, 20, 0, tzinfo=UTC)
TOKYO_MARCH = datetime(2026, 3, 1, tzinfo=ZoneInfo("Asia/Tokyo"))


async def test_status_and_the_cap_count_this_month_from_the_same_instant(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine = memory.build(sessions, MemoryConfig(timezone="Asia/Tokyo"))
    chat_id = await engine.ensure_chat(ChatKey(kind="imported", name="month"))
    asked: list[datetime] = []

    async def counting_since(guild_id: int, since: datetime) -> int:
        asked.append(since)
        return 0

    engine.reply_turns_since = counting_since  # type: ignore[method-assign]
    await replies_this_month(engine, guild_id=1, now=NOW)
    shown = (await engine.chat_stats(chat_id, NOW)).month_start

    assert asked == [shown]  # the cap counts from the month status shows
    assert shown == TOKYO_MARCH  # 15:00 UTC on 28 February; UTC's month began on 1 February


async def test_status_names_the_first_of_the_configured_zones_month(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine = memory.build(sessions, MemoryConfig(timezone="Asia/Tokyo"))
    chat_id = await engine.ensure_chat(ChatKey(kind="imported", name="month"))
    stats = await engine.chat_stats(chat_id, NOW)
    assert f"{stats.month_start:%Y-%m-%d}" == "2026-03-01"  # in UTC it would still be February
