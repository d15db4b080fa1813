"""DMs and the host's money: a per-person daily reply cap, the DMs' share of the host-wide
monthly budget, and the host-wide budget itself (every server and DM together)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import simcord
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.reply.gate import DM_BUDGET_NOTE, DM_CAP_NOTE, HOST_BUDGET_NOTE
from tests.worlds.reply_fixtures import fake, settings, simcord_bot, world
from tests.worlds.reply_world import World, make_settings
from tests.worlds.settings_world import spend

__all__ = ["fake", "settings", "simcord_bot", "world"]  # fixtures


async def dm(world: World, who: simcord.MemberActor, text: str) -> list[str]:
    world.later()
    await who.user.send_dm(text)
    return [m.content for m in who.user.dm_channel.history() if m.author.id == world.me.id]


@pytest.mark.parametrize("settings", [{"dm_daily_reply_cap": 2}], indirect=True)
async def test_a_person_gets_a_few_dm_replies_a_day(world: World) -> None:
    # The ledger stamps rows with the database's clock: run the simulated one at noon today.
    world.clock.set(datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0))
    assert len(await dm(world, world.alice, "one")) == 1
    assert len(await dm(world, world.alice, "two")) == 2
    third = await dm(world, world.alice, "three")
    assert len(world.replies()) == 2 and third[-1] == DM_CAP_NOTE.format(cap=2)
    assert len(await dm(world, world.alice, "four")) == 3  # the note once, then quiet
    assert len(await dm(world, world.bob, "bob's first")) == 1  # per person
    assert len(world.replies()) == 3
    world.clock.advance(24 * 3600)  # the next day
    assert len(await dm(world, world.alice, "a new day")) == 4 and len(world.replies()) == 4


@pytest.mark.parametrize(
    "settings",
    [{"monthly_budget_usd": 10.0, "dm_budget_share": 0.25, "dm_daily_reply_cap": 0}],
    indirect=True,
)
async def test_dms_spend_their_share_and_everything_stops_at_the_host_budget(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    now = world.clock.now()
    assert len(await dm(world, world.alice, "hi")) == 1
    dm_chat = await world.engine.chat_by_discord_id(world.alice.user.dm_channel.id)
    assert dm_chat is not None
    await spend(sessions, "2.50", now, guild_id=None, chat_id=dm_chat.id)  # the DMs' $2.50 is spent
    answers = await dm(world, world.alice, "still there?")
    assert answers[-1] == DM_BUDGET_NOTE and len(world.replies()) == 1
    assert len(await dm(world, world.bob, "me too?")) == 1 and len(world.replies()) == 1  # all DMs share it
    world.later()
    await world.alice.send(world.general, f"{world.me.mention} the server still has budget")
    assert len(world.replies()) == 2
    await spend(sessions, "7.50", now, guild_id=world.guild.id)  # the host's $10 is spent
    world.later()
    await world.bob.send(world.general, f"{world.me.mention} and now?")
    assert len(world.replies()) == 2 and world.bot_messages()[-1].content == HOST_BUDGET_NOTE
    world.later()
    await world.alice.send(world.general, f"{world.me.mention} hello?")
    assert len(world.replies()) == 2 and world.bot_messages()[-1].content == HOST_BUDGET_NOTE  # said once
    assert len(world.bot_messages()) == 2


def test_the_spending_settings_are_checked_and_the_model_list_always_has_the_default() -> None:
    bad = make_settings(monthly_budget_usd=-1.0, guild_monthly_budget_usd=-0.5, dm_budget_share=1.5,
                        dm_daily_reply_cap=-2)  # fmt: skip
    assert bad.problems() == [
        "GUILD_MONTHLY_BUDGET_USD cannot be negative",
        "MONTHLY_BUDGET_USD cannot be negative",
        "DM_BUDGET_SHARE must be between 0 and 1",
        "DM_DAILY_REPLY_CAP cannot be negative",
    ]
    assert make_settings().problems() == []
    listed = make_settings(
        reply_model="claude-sonnet-5-5", allowed_reply_models=" claude-haiku-4-5, ,claude-sonnet-5-5"
    )
    assert listed.reply_models() == ["claude-sonnet-5-5", "claude-haiku-4-5"]
