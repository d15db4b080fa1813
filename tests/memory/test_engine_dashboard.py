"""The engine's dashboard methods on a real database: the audit list written with each settings
change, what a person's erasure and the bot leaving a server leave of it, the links' lifetime
and a server's overview (its chats, never a DM; spend per day by kind; erasures by day)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory import Changer, LinkRefused, MemoryConfig, MemoryEngine, SimulatedClock, Usage, build
from memory.pricing import PriceTable
from memory.storage.log import ChatKey, NewMessage
from memory.storage.models import DashboardLink, SettingsAudit

GUILD, OTHER, ADA, BOB = 100, 200, 7, 8
NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def memory(sessions: async_sessionmaker[AsyncSession]) -> MemoryEngine:
    return build(sessions, MemoryConfig(), clock=SimulatedClock(NOW))


async def test_each_change_is_audited_and_a_persons_erasure_blanks_their_id(
    memory: MemoryEngine, sessions: async_sessionmaker[AsyncSession]
) -> None:
    store = memory.guild_settings
    await store.set(
        GUILD, by=Changer(ADA, "dashboard"), timezone="Europe/Oslo", monthly_budget_usd=Decimal("5")
    )
    await store.change_list(GUILD, "block_members", BOB, True, by=Changer(ADA, "slash"))
    await store.change_list(
        GUILD, "block_members", BOB, True, by=Changer(ADA, "slash")
    )  # no change: no entry
    await store.set(OTHER, by=Changer(ADA, "slash"), reply_to_name=False)
    entries = await store.audit(GUILD)
    assert sorted((e.user_id, e.source, e.setting, e.value) for e in entries) == [
        (ADA, "dashboard", "monthly_budget_usd", "$5.00"),
        (ADA, "dashboard", "timezone", "Europe/Oslo"),
        (ADA, "slash", "block_members", f"+{BOB}"),
    ]
    await memory.new_dashboard_link(GUILD, ADA)
    await memory.erase_author(GUILD, ADA)
    assert {e.user_id for e in await store.audit(GUILD)} == {None}  # the changes stay, by nobody
    assert [e.user_id for e in await store.audit(OTHER)] == [ADA]  # another server's erasure is its own
    async with sessions() as s:
        assert await s.scalar(select(func.count()).where(DashboardLink.user_id == ADA)) == 0
    await memory.erase_author_everywhere(ADA)
    await memory.forget_guild(GUILD)
    async with sessions() as s:
        assert await s.scalar(select(func.count()).where(SettingsAudit.user_id == ADA)) == 0
        assert await s.scalar(select(func.count()).where(SettingsAudit.guild_id == GUILD)) == 0


async def test_a_link_lasts_ten_minutes_and_works_once(memory: MemoryEngine) -> None:
    clock = memory.clock
    assert isinstance(clock, SimulatedClock)
    late = await memory.new_dashboard_link(GUILD, ADA)
    on_time = await memory.new_dashboard_link(GUILD, ADA)
    clock.advance(9 * 60)
    assert (await memory.redeem_dashboard_link(on_time)).user_id == ADA
    clock.advance(61)
    with pytest.raises(LinkRefused, match="expired"):
        await memory.redeem_dashboard_link(late)
    with pytest.raises(LinkRefused, match="used already"):
        await memory.redeem_dashboard_link(on_time)
    with pytest.raises(LinkRefused, match="not known"):
        await memory.redeem_dashboard_link("made-up")


async def test_a_servers_overview_lists_its_chats_spend_and_erasures_never_a_dm(memory: MemoryEngine) -> None:
    general = await memory.ensure_chat(ChatKey("text", "general", discord_id=1, guild_id=GUILD))
    await memory.ensure_chat(ChatKey("text", "elsewhere", discord_id=2, guild_id=OTHER))
    dm = await memory.ensure_chat(ChatKey("dm", "dm-ada", discord_id=3, recipient_id=ADA))
    messages = [
        NewMessage("ada", NOW - timedelta(hours=k), f"hello {k}", author_id=ADA, snowflake=50 + k)
        for k in range(3)
    ]
    await memory.append_many(general, messages)
    await memory.append_many(dm, [NewMessage("ada", NOW, "private", author_id=ADA, snowflake=99)])
    prices = PriceTable()
    usage = [Usage(input_tokens=1_000_000, output_tokens=0)]
    model = "claude-haiku-4-5"  # $1 per million input tokens (docs: the price table)
    await memory.record_usage(
        chat_id=general, guild_id=GUILD, kind="reply", model=model, usages=usage, prices=prices
    )
    await memory.record_usage(
        chat_id=general, guild_id=GUILD, kind="compact", model=model, usages=usage, prices=prices
    )
    await memory.erase_messages(general, [50, 51])
    overview = await memory.server_overview(GUILD, "UTC")
    assert [(c.name, c.messages) for c in overview.chats] == [("general", 3)]
    assert await memory.server_chat_ids(GUILD) == {general}
    [day] = overview.days
    assert day.reply == day.compact == Decimal(1) and overview.spent == Decimal(2)
    privacy = await memory.privacy_overview(GUILD, "UTC")
    assert [(d.day, d.count) for d in privacy.erasures] == [(NOW.date(), 2)] and privacy.opt_outs == 0
    host = await memory.host_overview()
    assert (host.dm_chats, host.dm_messages) == (1, 1)
    assert {(s.guild_id, s.chats, s.messages) for s in host.servers} == {(GUILD, 1, 3), (OTHER, 1, 0)}
