"""Per-server settings in PostgreSQL: choices, lists, once-a-month marks, spending from the
ledger, and the time zone reaching the server's memories."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.config import MemoryConfig
from memory.engine import MemoryEngine
from memory.policy.guild_settings import GuildSettingsStore
from memory.storage.log import ChatKey
from memory.storage.models import Chat, GuildSettings, UsageEntry

GUILD, OTHER_GUILD = 7, 8
NOW = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)


async def spend(
    sessions: async_sessionmaker[AsyncSession],
    cost: str,
    *,
    guild_id: int | None,
    chat_id: int | None = None,
    at: datetime = NOW,
    kind: str = "reply",
) -> None:
    async with sessions() as s, s.begin():
        s.add(UsageEntry(chat_id=chat_id, guild_id=guild_id, kind=kind, model="m", cost_usd=Decimal(cost),
                         created_at=at))  # fmt: skip


async def test_choices_default_to_unset_and_lists_change_one_id_at_a_time(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    store = GuildSettingsStore(sessions)
    assert (await store.choices(GUILD)).model is None
    await store.set(GUILD, model="claude-haiku-4-5", reply_mode="channels")
    assert await store.change_list(GUILD, "reply_channels", 10, True)
    assert not await store.change_list(GUILD, "reply_channels", 10, True)  # already there
    assert await store.change_list(GUILD, "block_roles", 200, True)
    choices = await store.choices(GUILD)
    assert choices.model == "claude-haiku-4-5" and choices.reply_mode == "channels"
    assert choices.reply_channels == {10} and choices.block_roles == {200}
    assert await store.change_list(GUILD, "reply_channels", 10, False)
    await store.set(GUILD, model=None)  # back to the host's default
    after = await store.choices(GUILD)
    assert after.reply_channels == frozenset() and after.model is None and after.reply_mode == "channels"
    assert (await store.choices(OTHER_GUILD)).block_roles == frozenset()  # per server


async def test_two_admins_adding_at_once_both_land(sessions: async_sessionmaker[AsyncSession]) -> None:
    store = GuildSettingsStore(sessions)
    await asyncio.gather(*(store.change_list(GUILD, "allow_members", k, True) for k in range(1, 9)))
    assert (await store.choices(GUILD)).allow_members == set(range(1, 9))


async def test_a_month_mark_is_taken_once(sessions: async_sessionmaker[AsyncSession]) -> None:
    store = GuildSettingsStore(sessions)
    results = await asyncio.gather(
        *(store.mark_month(GUILD, "budget_warned_month", "2026-03") for _ in range(5))
    )
    assert sorted(results) == [False, False, False, False, True]
    assert not await store.mark_month(GUILD, "budget_warned_month", "2026-03")
    assert await store.mark_month(GUILD, "budget_paused_month", "2026-03")  # a separate mark
    assert await store.mark_month(GUILD, "budget_warned_month", "2026-04")  # next month: again


async def test_spending_this_month_by_server_dms_and_host(sessions: async_sessionmaker[AsyncSession]) -> None:
    engine = MemoryEngine(sessions, MemoryConfig())
    dm_chat = await engine.ensure_chat(ChatKey("dm", "dm-alice", discord_id=555))
    text_chat = await engine.ensure_chat(ChatKey("text", "general", discord_id=556, guild_id=GUILD))
    await spend(sessions, "1.25", guild_id=GUILD, chat_id=text_chat)
    await spend(sessions, "0.50", guild_id=GUILD, chat_id=text_chat, kind="compact")
    await spend(sessions, "2.00", guild_id=OTHER_GUILD)
    await spend(sessions, "0.30", guild_id=None, chat_id=dm_chat)
    await spend(sessions, "9.00", guild_id=GUILD, at=datetime(2026, 2, 28, 23, 0, tzinfo=UTC))  # last month
    await spend(sessions, "0.70", guild_id=None, kind="compact")  # an imported chat: not a DM
    store = GuildSettingsStore(sessions)
    assert (await store.guild_forecast(GUILD, NOW, "UTC")).spent == Decimal("1.75")  # replies + compaction
    assert await store.dm_spent(NOW, "UTC") == Decimal("0.30")
    assert await store.host_spent(NOW, "UTC") == Decimal("4.75")  # 1.25 + 0.5 + 2 + 0.3 + 0.7
    # In Tokyo (UTC+9) 23:00 UTC on 28 Feb is already March: last month's 9.00 counts.
    assert (await store.guild_forecast(GUILD, NOW, "Asia/Tokyo")).spent == Decimal("10.75")


async def test_replies_today_counts_turns_not_calls(sessions: async_sessionmaker[AsyncSession]) -> None:
    engine = MemoryEngine(sessions, MemoryConfig())
    dm_chat = await engine.ensure_chat(ChatKey("dm", "dm-bob", discord_id=600))
    for turn in range(3):
        at = NOW - timedelta(hours=turn)
        for _call in range(2):  # two model calls (a tool step) in one turn share its time
            await spend(sessions, "0.01", guild_id=None, chat_id=dm_chat, at=at)
    await spend(sessions, "0.01", guild_id=None, chat_id=dm_chat, at=NOW - timedelta(days=1))
    assert await GuildSettingsStore(sessions).replies_today(dm_chat, NOW, "UTC") == 3


async def test_a_servers_time_zone_reaches_its_memories_old_and_new(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine = MemoryEngine(sessions, MemoryConfig(timezone="UTC"))
    old = await engine.ensure_chat(ChatKey("text", "old", discord_id=700, guild_id=GUILD))
    elsewhere = await engine.ensure_chat(ChatKey("text", "x", discord_id=701, guild_id=OTHER_GUILD))
    store = GuildSettingsStore(sessions, default_timezone="UTC")
    await store.set(GUILD, timezone="Europe/Stockholm")
    new = await engine.ensure_chat(ChatKey("text", "new", discord_id=702, guild_id=GUILD))

    async def zones() -> dict[int, str]:
        async with sessions() as s:
            return {row[0]: row[1] for row in await s.execute(select(Chat.id, Chat.timezone))}

    assert await zones() == {old: "Europe/Stockholm", elsewhere: "UTC", new: "Europe/Stockholm"}
    view = await engine.prompt_view(new)
    assert view.timezone == "Europe/Stockholm"  # what a reply turn's note and dates use
    await store.set(GUILD, timezone=None)  # back to the host's
    assert await zones() == {old: "UTC", elsewhere: "UTC", new: "UTC"}


async def test_a_server_that_removes_the_bot_leaves_no_settings(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine = MemoryEngine(sessions, MemoryConfig())
    store = GuildSettingsStore(sessions)
    await store.set(GUILD, model="claude-haiku-4-5")
    await store.change_list(GUILD, "block_members", 42, True)
    await store.set(OTHER_GUILD, model="claude-haiku-4-5")
    await engine.forget_guild(GUILD)
    async with sessions() as s:
        kept = (await s.scalars(select(GuildSettings.guild_id))).all()
    assert kept == [OTHER_GUILD]
