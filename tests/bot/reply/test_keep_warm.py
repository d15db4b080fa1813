"""Keep-warm pings end to end: SimCord (real discord.py), the real reply extension, real
PostgreSQL and the fake Anthropic API (its prompt cache on a clock the test moves with the bot's).
The tests tick the keep-warm loop themselves (its timer is stopped)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.status import format_status
from bot.core.tools import TOOLS
from bot.reply.limits import replies_this_month
from memory.storage.models import UsageEntry
from tests.fakes.anthropic_api import LogEntry
from tests.worlds.reply_fixtures import fake, settings, simcord_bot, world
from tests.worlds.reply_world import World, marked_blocks
from tests.worlds.settings_world import spend

__all__ = ["fake", "settings", "simcord_bot", "world"]  # fixtures

HOUR = 3600.0


def keep_warm_of(world: World) -> Any:
    """The reply cog's keep-warm, its timer stopped: the test ticks it."""
    bot: Any = world.env.bot
    cog: Any = bot.get_cog("ReplyCog")
    cog.keep_warm_loop.cancel()
    return cog.keep_warm


def later(world: World, seconds: float) -> None:
    """Move the bot's clock and the fake API's (its prompt cache's) together."""
    world.clock.advance(seconds)
    world.fake.advance(seconds)


async def ask(world: World, text: str, gap: float = 3 * HOUR) -> LogEntry:
    later(world, gap)
    world.fake.script.push_text("Sure.", match="reply")
    await world.alice.send(world.general, f"{world.me.mention} {text}")
    return world.replies()[-1]


async def three_turns_hours_apart(world: World) -> LogEntry:
    """Three turns 3 hours apart (the last one returned): from the second on, the chat's gaps
    call for pings (three reach a 3-hour gap: 0.3x against a 1.25x write)."""
    for k, gap in enumerate([0, 3 * HOUR, 3 * HOUR]):
        turn = await ask(world, f"turn {k}", gap=gap)
    return turn


async def ledger_rows(sessions: async_sessionmaker[AsyncSession], kind: str) -> int:
    async with sessions() as s:
        return int(await s.scalar(select(func.count()).where(UsageEntry.kind == kind)) or 0)


async def test_a_quiet_chat_is_pinged_and_its_next_turn_reads_the_cache(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    warm = keep_warm_of(world)
    await ask(world, "first", gap=0)
    assert warm.chats == {}  # a chat's first turn: no gaps known, no pings
    await ask(world, "second")  # 3 hours on: pinging through 3 hours (0.3x) beats a write (1.25x)
    turn = await ask(world, "third")
    assert world.chat_id in warm.chats
    later(world, 54 * 60)
    assert await warm.tick() == 0  # not yet
    later(world, 60)
    assert await warm.tick() == 1
    (ping,) = world.fake.requests("keep_warm")
    body = ping.body
    assert body["max_tokens"] == 1 and body["tools"] == TOOLS and body["system"] == turn.body["system"]
    # The turn's people, row and tail blocks with the same marks, through the tail's mark (the
    # bot's own answer has joined the newest, unmarked block since); the note unmarked.
    marks = marked_blocks(body)
    assert marks == marked_blocks(turn.body)[:-1]  # the same marks, but no end mark
    through = marks[-1][1] + 1
    turn_content, ping_content = turn.body["messages"][0]["content"], body["messages"][0]["content"]
    assert ping_content[:through] == turn_content[:through]
    assert "cache_control" not in ping_content[-1]
    assert ping.usage is not None and ping.usage["cache_read_input_tokens"] > 0
    assert ping.usage["cache_creation_input_tokens"] == 0  # nothing new since the turn: all read
    for _ in range(2):  # the next two pings, 55 minutes apart
        later(world, 55 * 60)
        assert await warm.tick() == 1
    later(world, 5 * 60)  # 3 hours after the third turn: the fourth reads what the pings kept
    fourth = await ask(world, "fourth", gap=0)
    assert (
        fourth.usage is not None
        and fourth.usage["cache_read_input_tokens"] >= ping.usage["cache_read_input_tokens"]
    )
    assert await ledger_rows(sessions, "keep_warm") == 3  # paid for, in the ledger
    assert await replies_this_month(world.engine, world.guild.id, world.clock.now()) == 4  # not turns
    status = format_status(
        "#general", await world.engine.chat_stats(world.chat_id, world.clock.now()), world.clock.now()
    )
    assert "4 reply calls" in status and "3 keep-warm pings ($" in status  # /memory status shows them


async def test_without_pings_the_same_turn_writes_the_prompt_again(world: World) -> None:
    # The other side of the test above: the same turns, nobody ticks, the 1-hour entry lapses.
    keep_warm_of(world)
    await three_turns_hours_apart(world)
    fourth = await ask(world, "fourth")
    assert fourth.usage is not None and fourth.usage["cache_read_input_tokens"] == 0  # all lapsed
    assert fourth.usage["cache_creation"]["ephemeral_1h_input_tokens"] > 0  # written again
    assert world.fake.requests("keep_warm") == []


async def test_a_ping_after_an_erasure_sends_none_of_the_erased_words(world: World) -> None:
    warm = keep_warm_of(world)
    await ask(world, "first", gap=0)
    await ask(world, "second")
    later(world, 3 * HOUR)
    await world.bob.send(world.general, "my locker code is zebracorn-4417")
    world.fake.script.push_text("Noted.", match="reply")
    await world.alice.send(world.general, f"{world.me.mention} third")
    assert "zebracorn-4417" in str(world.replies()[-1].body)  # the turn showed it
    assert world.chat_id in warm.chats
    await world.engine.erase_author_everywhere(world.bob.user.id)  # bob's /forget-me
    later(world, 55 * 60)
    assert await warm.tick() == 1
    (ping,) = world.fake.requests("keep_warm")
    assert "zebracorn" not in str(ping.body)


@pytest.mark.parametrize("settings", [{"guild_monthly_budget_usd": 10.0}], indirect=True)
async def test_no_pings_once_the_server_nears_its_budget(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    warm = keep_warm_of(world)
    await three_turns_hours_apart(world)
    assert world.chat_id in warm.chats
    await spend(sessions, "8.50", world.clock.now(), guild_id=world.guild.id)  # 85% of $10
    later(world, 55 * 60)
    assert await warm.tick() == 0
    assert world.fake.requests("keep_warm") == [] and warm.chats == {}
    assert await ledger_rows(sessions, "keep_warm") == 0


@pytest.mark.parametrize("settings", [{"keep_warm_hours": 0.0}], indirect=True)
async def test_keep_warm_off_means_no_pings_and_the_marks_of_before(world: World) -> None:
    bot: Any = world.env.bot
    cog: Any = bot.get_cog("ReplyCog")
    assert not cog.keep_warm_loop.is_running()
    await three_turns_hours_apart(world)
    assert cog.keep_warm.chats == {}
    # Gaps of hours without pings: a 1-hour write would be wasted, so 5-minute marks.
    marks = [
        b["cache_control"] for b in world.replies()[-1].body["messages"][0]["content"] if "cache_control" in b
    ]
    assert all("ttl" not in mark for mark in marks)


async def test_pings_stop_at_the_chosen_horizon(world: World) -> None:
    warm = keep_warm_of(world)
    await three_turns_hours_apart(world)
    horizon = warm.chats[world.chat_id].plan.kept_warm_for
    assert horizon == timedelta(minutes=165).total_seconds()  # 3 pings reach a 3-hour gap
    sent = 0
    for _ in range(8):
        later(world, 55 * 60)
        sent += await warm.tick()
    assert sent == 3 and warm.chats == {}


async def test_a_wiped_chat_is_let_go_without_a_ping(world: World) -> None:
    warm = keep_warm_of(world)
    await three_turns_hours_apart(world)
    assert world.chat_id in warm.chats
    await world.engine.wipe_chat(world.chat_id)  # /memory wipe
    later(world, 55 * 60)
    assert await warm.tick() == 0
    assert world.fake.requests("keep_warm") == [] and warm.chats == {}


@pytest.mark.parametrize(
    "settings",
    [{"monthly_budget_usd": 10.0, "dm_budget_share": 0.25, "dm_daily_reply_cap": 0}],
    indirect=True,
)
async def test_a_dm_is_pinged_until_the_dms_near_their_share(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    warm = keep_warm_of(world)
    for k, gap in enumerate([0, 3 * HOUR, 3 * HOUR]):
        later(world, gap + 120)
        world.fake.script.push_text("Sure.", match="reply")
        await world.alice.user.send_dm(f"dm turn {k}")
    dm_chat = await world.engine.chat_by_discord_id(world.alice.user.dm_channel.id)
    assert dm_chat is not None and dm_chat.id in warm.chats
    later(world, 55 * 60)
    assert await warm.tick() == 1  # the DMs have spent next to nothing of their $2.50
    await spend(sessions, "2.00", world.clock.now(), guild_id=None, chat_id=dm_chat.id)  # 80% of it
    later(world, 55 * 60)
    assert await warm.tick() == 0 and warm.chats == {}
    assert len(world.fake.requests("keep_warm")) == 1
