"""The two moments an erasure leaves on a chat (memory/storage/log.py, memory/privacy/erase.py): a wipe's,
below which no message is ever appended again, checked under the chat's lock (so an append in
flight is either erased with the rest or refused); and a person's erasure's, below which no
backfill starts. Both are times: neither names anyone."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.storage import log
from memory.storage.log import ChatKey
from memory.storage.models import Chat, Message
from tests.memory.helpers import make_engine, message
from tests.worlds.eva_process import eventually

Sessions = async_sessionmaker[AsyncSession]
LOCK_WAITERS = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%chats%'"


async def snowflakes(sessions: Sessions, chat_id: int) -> list[int]:
    async with sessions() as s:
        rows = await s.scalars(
            select(Message.snowflake).where(Message.chat_id == chat_id).order_by(Message.idx)
        )
        return [int(r) for r in rows.all() if r is not None]


async def test_a_wipe_refuses_every_older_message_and_backfills_from_its_moment(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await engine.ensure_chat(ChatKey("text", "general", discord_id=70, guild_id=7))
    await engine.append_replies(chat, [(message(k), None) for k in range(3)])  # snowflakes 10000-10002
    assert await engine.backfill_start(chat) == 10_002

    await engine.wipe_chat(chat, moment=lambda: 10_005)
    assert await engine.backfill_start(chat) == 10_004  # history after it: 10005 on
    held = [(message(k), None) for k in (1, 3, 4, 5, 6)]  # a queue that held older ones, then newer
    assert await engine.append_replies(chat, held) == [None, None, None, 0, 1]
    assert await snowflakes(sessions, chat) == [10_005, 10_006]
    await engine.wipe_chat(chat, moment=lambda: 10_001)  # an older moment never lowers it
    assert await engine.append_replies(chat, [(message(4), None)]) == [None]
    async with sessions() as s:
        assert await s.scalar(select(Chat.erased_before).where(Chat.id == chat)) == 10_005


async def test_a_wipe_waits_for_an_append_in_flight_and_erases_it(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await engine.ensure_chat(ChatKey("text", "general", discord_id=70, guild_id=7))
    await engine.append_replies(chat, [(message(0), None)])
    async with sessions() as s, s.begin():  # a batch being written when the wipe comes
        await log.append_replies(s, chat, [(message(k), None) for k in (1, 2)])
        wipe = asyncio.create_task(engine.wipe_chat(chat, moment=lambda: 10_003))

        async def waiting_for_a_lock() -> bool:
            async with sessions() as probe:
                found = await probe.scalar(text(LOCK_WAITERS))
                return bool(found)

        await eventually(waiting_for_a_lock, within=10, every=0.01)
    report = await wipe  # the batch committed first: the wipe saw it
    assert report.messages == 3
    assert await snowflakes(sessions, chat) == []
    async with sessions() as s:
        assert await s.scalar(select(Chat.next_index).where(Chat.id == chat)) == 0


async def test_a_persons_erasure_leaves_a_backfill_floor_that_the_log_then_passes(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    here = await engine.ensure_chat(ChatKey("text", "general", discord_id=70, guild_id=7))
    thread = await engine.ensure_chat(ChatKey("thread", "plans", discord_id=71, guild_id=7, parent_id=70))
    elsewhere = await engine.ensure_chat(ChatKey("text", "general", discord_id=80, guild_id=8))
    for chat in (here, thread, elsewhere):
        await engine.append_replies(chat, [(message(k), None) for k in range(3)])
    max_id = message(1).author_id
    assert max_id is not None

    await engine.erase_author(7, max_id, moment=lambda: 10_050)
    assert [await engine.backfill_start(c) for c in (here, thread, elsewhere)] == [10_050, 10_050, 10_002]
    later = replace(message(60), snowflake=10_060)
    await engine.append_replies(here, [(later, None)])  # the log is past the floor: it goes
    async with sessions() as s:
        floors = dict((await s.execute(select(Chat.id, Chat.backfill_floor))).all())
    assert floors == {here: None, thread: 10_050, elsewhere: None}
    assert await engine.backfill_start(here) == 10_060
    # A message older than the floor, from a queue, is still appended: the floor bounds a
    # backfill only (the person's own are refused in the bot, bot/gateway/erasure_order.py).
    assert await engine.append_replies(thread, [(replace(message(40), snowflake=10_040), None)]) == [3]
