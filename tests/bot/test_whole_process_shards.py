"""Two real `eva run` processes splitting four shards (SHARD_COUNT=4, SHARD_IDS=0-1 and 2-3)
against the Discord fake serving four shards, as Discord does: a guild's events on shard
``(guild_id >> 22) % 4``, DMs on shard 0. Every message is logged once, each mention answered
once by the process owning its guild's shard, DMs by the shard-0 process; killing one process
leaves the other's guilds working, and the killed one's guilds are backfilled when it returns."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.storage.models import Chat, Message
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.worlds.eva_process import EvaProcess, ProcessWorld, eventually

Sessions = async_sessionmaker[AsyncSession]
SHARDS = 4
# The background walk's next look an hour away: the history requests below are the backfill's.
QUIET = {"SHARD_COUNT": "4", "RECONCILE_TICK": "3600"}
LOW, HIGH = {**QUIET, "SHARD_IDS": "0-1"}, {**QUIET, "SHARD_IDS": "2-3"}


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeDiscord, FakeAnthropic]]:
    """The fakes of tests/conftest.py, with /gateway/bot recommending four shards."""
    async with FakeDiscord(shard_count=SHARDS) as discord_fake, FakeAnthropic() as anthropic_fake:
        yield discord_fake, anthropic_fake


def guilds_on_every_shard(discord_fake: FakeDiscord) -> list[int]:
    """One guild per shard, each with a channel where alice and bob talk; the channels' ids."""
    world, ids = discord_fake.world, discord_fake.ids
    channels = []
    for shard in range(SHARDS):
        guild = world.add_guild(f"Shard {shard} guild", owner_id=ids.owner, shard=(shard, SHARDS))
        assert (guild.id >> 22) % SHARDS == shard
        for person in (ids.alice, ids.bob):
            world.add_member(guild.id, person)
        channels.append(world.add_text_channel(guild.id, f"talk-{shard}").id)
    return channels


def answered(process: EvaProcess) -> Counter[int]:
    """The messages ``process`` answered (its reply.answered log lines), with how often."""
    return Counter(int(e["message_id"]) for e in process.events if e.get("event") == "reply.answered")


def bot_replies(discord_fake: FakeDiscord, channel_id: int) -> list[Any]:
    bot = discord_fake.ids.bot
    return [m for m in discord_fake.world.channel_messages(channel_id) if int(m["author"]["id"]) == bot]


async def logged_counts(sessions: Sessions, snowflakes: list[int]) -> dict[int, int]:
    async with sessions() as s:
        rows = await s.execute(
            select(Message.snowflake, func.count())
            .where(Message.snowflake.in_(snowflakes))
            .group_by(Message.snowflake)
        )
        return {int(snowflake): int(count) for snowflake, count in rows.all()}


async def test_two_processes_split_four_shards_and_survive_each_other(
    processes: ProcessWorld, sessions: Sessions
) -> None:
    discord_fake, ids = processes.discord, processes.discord.ids
    post = discord_fake.chat.post_user_message
    channels = guilds_on_every_shard(discord_fake)
    dm = discord_fake.world.open_dm(ids.alice).id
    low, high = await processes.run(**LOW), await processes.run(**HIGH)
    readies = {p: next(e for e in p.events if e.get("event") == "bot.ready") for p in (low, high)}
    assert readies[low]["shards"] == "shards 0-1 of 4" and readies[high]["shards"] == "shards 2-3 of 4"
    assert {s["shard"][0] for s in discord_fake.gateway.describe()} == {0, 1, 2, 3}

    chatter = [int(post(channel, ids.bob, f"hello on shard {k}")["id"]) for k, channel in enumerate(channels)]
    mentions = [
        int(post(channel, ids.alice, f"<@{ids.bot}> which shard is {k}?")["id"])
        for k, channel in enumerate(channels)
    ]
    asked_in_dm = int(post(dm, ids.alice, "are you there?")["id"])
    everything = [*chatter, *mentions, asked_in_dm]

    async def all_logged() -> bool:
        return len(await logged_counts(sessions, everything)) == len(everything)

    await eventually(all_logged, within=30)
    assert set((await logged_counts(sessions, everything)).values()) == {1}

    async def all_answered() -> bool:  # the log line follows the reply (a streamed reply shows first)
        return len(answered(low) + answered(high)) == len(mentions) + 1

    await eventually(all_answered, within=30)
    by_low, by_high = answered(low), answered(high)
    assert by_low == Counter({mentions[0]: 1, mentions[1]: 1, asked_in_dm: 1})  # shards 0, 1 and the DM
    assert by_high == Counter({mentions[2]: 1, mentions[3]: 1})
    assert [len(bot_replies(discord_fake, c)) for c in [*channels, dm]] == [1, 1, 1, 1, 1]

    # The high process dies (no goodbye); the low one's guilds and DMs go on.
    high.kill()
    await high.proc.wait()
    missed = [int(post(channels[k], ids.bob, f"while 2-3 is away, {k}")["id"]) for k in (2, 3)]
    kept = [int(post(channels[k], ids.bob, f"low keeps going, {k}")["id"]) for k in (0, 1)]
    still = int(post(channels[0], ids.alice, f"<@{ids.bot}> still with me?")["id"])

    async def low_goes_on() -> bool:
        return len(await logged_counts(sessions, [*kept, still])) == 3 and answered(low)[still] == 1

    await eventually(low_goes_on, within=30)
    assert await logged_counts(sessions, missed) == {}  # nobody serves shards 2-3 now
    assert not any(e.get("event") == "ingest.guild_gone" for e in low.events), (
        "2-3's guilds are not low's to judge"
    )

    # It comes back: its guilds' history is fetched, nothing twice, nothing of low's forgotten.
    dm_history = f"/channels/{dm}/messages"
    dm_reads = len(discord_fake.requests("GET", dm_history))
    back = await processes.run(**HIGH)

    async def missed_logged() -> bool:
        return len(await logged_counts(sessions, missed)) == len(missed)

    await eventually(missed_logged, within=30)
    assert set((await logged_counts(sessions, [*everything, *missed, *kept, still])).values()) == {1}
    async with sessions() as s:
        guilds = set((await s.scalars(select(Chat.guild_id).where(Chat.kind == "text"))).all())
    assert {discord_fake.world.channel(c).guild_id for c in channels} <= guilds
    backfilled = {int(e["channel_id"]) for e in back.events if e.get("event") == "ingest.backfilled"}
    assert backfilled == {channels[2], channels[3]}
    assert len(discord_fake.requests("GET", dm_history)) == dm_reads, "the DM's history is shard 0's to read"
    for process in (low, back):
        assert not any(e.get("event") == "ingest.guild_gone" for e in process.events)
        assert await process.terminate() == 0
