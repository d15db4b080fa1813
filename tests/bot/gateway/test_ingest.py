"""Ingest in a simulated guild (SimCord, real discord.py) on the real database: every message becomes one log entry, in order, per channel; edits,
deletes and bulk deletes reach the memory; gone channels, threads and guilds take their
memory with them."""

from __future__ import annotations

import asyncio
from typing import Any

import discord
import pytest
from simcord.builders import ChannelHandle
from simcord.enums import MessageType as SimMessageType
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.scheduler import CompactionScheduler
from bot.services import Services
from bot.settings import Settings
from memory.config import MemoryConfig
from memory.engine import MemoryEngine
from memory.storage.models import Chat, Message, TreeNode
from memory.tree.node import covering
from tests.bot.conftest import Room, ingest_of, make_bot_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.worlds.bot_world import TINY_MEMORY


async def logged(sessions: async_sessionmaker[AsyncSession], chat_id: int) -> list[Message]:
    async with sessions() as s:
        rows = await s.scalars(select(Message).where(Message.chat_id == chat_id).order_by(Message.idx))
        return list(rows.all())


async def chat_of(engine: MemoryEngine, channel: ChannelHandle) -> int:
    info = await engine.chat_by_discord_id(channel.id)
    assert info is not None, "the channel has no memory"
    return info.id


async def test_three_people_two_channels_are_logged_in_order_once_per_channel(
    room: Room, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    env, guild, general = room
    random = guild.create_text_channel("random")
    alice = guild.add_member(env.create_user("alice", global_name="Alice A."), nick="ali")
    bob = room.member("bob", global_name="Bobby")
    cara = room.member("cara")
    script = [
        (alice, general, "morning all"),
        (bob, random, "anyone seen my keys"),
        (cara, general, "hi alice"),
        (alice, random, "under the couch"),
        (bob, general, "the paddle boat trip is on"),
        (cara, random, "lol"),
        (alice, general, "great, I'll bring snacks"),
    ]
    sent: dict[int, list[discord.Message]] = {general.id: [], random.id: []}
    for actor, channel, text in script:
        sent[channel.id].append(await actor.send(channel, text))
    # A re-delivered event (a gateway replay) must not log the message a second time.
    again = sent[general.id][0]
    ingest = ingest_of(env.bot)  # type: ignore[arg-type]
    ingest.queue_message(again)
    assert await ingest.flush(timeout=5)

    engine = services.engine
    for channel, names in ((general, ["ali", "cara", "Bobby", "ali"]), (random, ["Bobby", "ali", "cara"])):
        rows = await logged(sessions, await chat_of(engine, channel))
        expected = [(a, c, t) for a, c, t in script if c is channel]
        assert [r.idx for r in rows] == list(range(len(expected)))
        assert [r.text for r in rows] == [t for _, _, t in expected]
        assert [r.snowflake for r in rows] == [m.id for m in sent[channel.id]]
        assert [r.author_name for r in rows] == names  # nick, else global name, else username
        assert [r.author_id for r in rows] == [a.id for a, _, _ in expected]

    general_view = (await engine.prompt_view(await chat_of(engine, general))).render()
    random_view = (await engine.prompt_view(await chat_of(engine, random))).render()
    for _, channel, text in script:
        assert (text in general_view) == (channel is general)
        assert (text in random_view) == (channel is random)


async def test_what_the_memory_sees_of_a_message(
    room: Room, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    env, guild, general = room
    alice, other_bot = room.member("alice"), room.member("otherbot", bot=True)
    first = await alice.send(general, "look at this", attachments=[("map.png", b"\x89PNG")])
    await alice.send(general, "and this", reply_to=first)
    await other_bot.send(general, "beep, I am another bot")  # IGNORE_BOTS: not logged
    guild.create_system_message(general, SimMessageType.NEW_MEMBER, author=alice)  # a join: not logged
    bot_channel = env.bot.get_channel(general.id)
    assert isinstance(bot_channel, discord.TextChannel)
    own = await bot_channel.send("my own reply is logged too")
    await env.settle()
    assert await ingest_of(env.bot).flush(timeout=5)  # type: ignore[arg-type]

    rows = await logged(sessions, await chat_of(services.engine, general))
    assert [r.text for r in rows] == [
        "look at this [file: map.png]",
        "and this (reply to #0)",
        "my own reply is logged too",
    ]
    assert [r.reply_to for r in rows] == [None, 0, None]
    assert [r.is_bot for r in rows] == [False, False, True]
    assert rows[2].snowflake == own.id and rows[2].author_id == env.bot.user.id  # type: ignore[union-attr]


async def test_direct_messages_are_their_own_memory(
    room: Room, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    env, guild, general = room
    dan = env.create_user("dan")
    guild.add_member(dan)
    await dan.send_dm("just between us")
    chats = await services.engine.list_chats()
    assert [(c.kind, c.guild_id) for c in chats] == [("dm", None)]
    rows = await logged(sessions, chats[0].id)
    assert [r.text for r in rows] == ["just between us"]
    assert await services.engine.chat_by_discord_id(general.id) is None


async def test_opted_out_people_and_paused_channels_are_not_logged(
    room: Room, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    env, guild, general = room
    alice, bob = room.people("alice", "bob")
    engine, ingest = services.engine, ingest_of(env.bot)  # type: ignore[arg-type]
    await alice.send(general, "one")
    await engine.opt_out(guild.id, bob.id)
    await ingest.refresh_opt_outs(guild.id)
    await bob.send(general, "bob is not here")
    await alice.send(general, "two")
    chat_id = await chat_of(engine, general)
    await engine.set_paused(chat_id, True)
    await alice.send(general, "while paused")
    await engine.set_paused(chat_id, False)
    await engine.opt_in(guild.id, bob.id)
    await ingest.refresh_opt_outs(guild.id)
    await bob.send(general, "bob is back")
    rows = await logged(sessions, chat_id)
    assert [r.text for r in rows] == ["one", "two", "bob is back"]


@pytest.fixture
def bot_settings(fake_anthropic: FakeAnthropic) -> Settings:
    # Small sizes, so that a few messages build summary lines (docs/design.md section 7).
    return make_bot_settings(fake_anthropic, **TINY_MEMORY)


async def covering_nodes(sessions: async_sessionmaker[AsyncSession], chat_id: int, idx: int) -> int:
    above = [node for node in covering(idx, 12) if node[0] > 0]
    async with sessions() as s:
        nodes = await s.execute(select(TreeNode.level, TreeNode.idx).where(TreeNode.chat_id == chat_id))
        return len({(int(level), int(idx)) for level, idx in nodes.all()} & set(above))


async def test_edit_delete_and_bulk_delete_reach_the_memory(
    room: Room, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    env, _, general = room
    alice, bob = room.people("alice", "bob")
    sent = []
    for k in range(24):
        actor = alice if k % 2 == 0 else bob
        sent.append(await actor.send(general, f"message number {k} about the boat trip and the snacks"))
    chat_id = await chat_of(services.engine, general)
    report = await services.engine.compact(chat_id, until_idle=True)
    assert report.calls > 0  # through the composition root's summarizer, to the fake Anthropic
    assert await covering_nodes(sessions, chat_id, 2) > 0, "the setup should have built lines over #2"

    await alice.edit(sent[2], "message number 2, edited")
    await bob.delete(sent[3])
    env.backend.bulk_delete_messages(general.id, [sent[4].id, sent[5].id, sent[6].id])
    await env.settle()
    assert await ingest_of(env.bot).flush(timeout=5)  # type: ignore[arg-type]

    rows = {r.idx: r for r in await logged(sessions, chat_id)}
    assert rows[2].text == "message number 2, edited" and rows[2].edited_at is not None
    for idx in (3, 4, 5, 6):
        assert rows[idx].text is None and rows[idx].author_name is None and rows[idx].author_id is None
        assert rows[idx].erased_at is not None
    assert rows[1].text is not None and rows[7].text is not None
    for idx in (2, 3, 4, 5, 6):  # every line built over an edited or erased message is gone
        assert await covering_nodes(sessions, chat_id, idx) == 0


async def test_gone_channels_threads_and_guilds_take_their_memory(
    room: Room, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    env, guild, general = room
    random = guild.create_text_channel("random")
    alice = room.member("alice")
    thread = ChannelHandle(env, guild, env.backend.create_thread(general.id, "plans", alice.id))
    for channel in (general, random, thread):
        await alice.send(channel, f"hello {channel.name}")
    other = env.create_guild("Other")
    elsewhere = other.create_text_channel("elsewhere")
    await other.add_member(env.create_user("erin")).send(elsewhere, "far away")

    async def chat_count() -> int:
        async with sessions() as s:
            return int(await s.scalar(select(func.count()).select_from(Chat)) or 0)

    assert await chat_count() == 4
    env.backend.delete_channel(general.id)  # its thread goes with it
    await env.settle()
    assert {c.name for c in await services.engine.list_chats()} == {"random", "elsewhere"}
    env.backend.remove_guild(other.id)
    await env.settle()
    assert {c.name for c in await services.engine.list_chats()} == {"random"}
    async with sessions() as s:
        assert await s.scalar(select(func.count()).select_from(Message)) == 1


# --- the scheduler: chats ingest marked are compacted at the next tick -------------------------


async def test_one_scheduler_step_compacts_what_ingest_logged(
    room: Room, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general = room.general
    alice = room.member("alice")
    for k in range(24):
        await alice.send(general, f"message number {k} about the boat trip and the snacks")
    scheduler = services.scheduler
    assert scheduler is not None and not scheduler.running  # tests step it by hand
    first = await scheduler.step()
    assert first.chats == 1 and first.calls > 0 and first.swaps == 1
    view = await services.engine.prompt_view(await chat_of(services.engine, general))
    assert view.row_lines and view.boundary > 0  # the memory row now summarizes the start
    again = await scheduler.step()
    assert again.calls == 0 and again.swaps == 0  # nothing new: nothing to do


class HangingCompactor:
    """A compaction call that never answers (a hung model call)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def chats_with_work(self) -> list[int]:
        return [1]

    async def run(self, chat_id: int) -> Any:
        self.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled = True
            raise


async def test_the_scheduler_ticks_by_itself_and_stop_cancels_a_hung_tick(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    compactor = HangingCompactor()
    engine = MemoryEngine(sessions, MemoryConfig(), compactor=compactor)  # type: ignore[arg-type]
    scheduler = CompactionScheduler(engine, interval=0.05)
    scheduler.start()
    async with asyncio.timeout(5):
        await compactor.started.wait()  # the first tick runs at once, on its own
    async with asyncio.timeout(2):
        await scheduler.stop(grace=0.1)
    assert compactor.cancelled and not scheduler.running
