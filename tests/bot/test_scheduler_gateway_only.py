"""`eva run --no-compactor`: the gateway's scheduler builds nothing (`eva worker` processes do),
and still VACUUMs after this process's erasures, which no other process knows of."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.scheduler import CompactionScheduler
from tests.memory.helpers import make_engine, message, new_chat

Sessions = async_sessionmaker[AsyncSession]


async def test_a_gateway_only_tick_builds_nothing_and_still_purges(sessions: Sessions) -> None:
    engine, summarizer, clock = make_engine(sessions)
    chat = await new_chat(engine)
    await engine.append_many(chat, [message(k) for k in range(120)])  # well past the tail's start
    clock.advance(engine.config.quiet_seconds + 1)

    gateway = CompactionScheduler(engine, compact=False)
    gateway.mark_dirty(chat)
    assert (await gateway.step()).chats == 0
    assert summarizer.calls == 0 and (await engine.prompt_view(chat)).boundary == 0

    await engine.erase_messages(chat, [10_005])
    assert engine.purge_due
    await gateway.step()
    assert not engine.purge_due, "the erasing process VACUUMs, compactor or not"

    worker = CompactionScheduler(engine)  # the same chat, with the compactor: it has work
    assert (await worker.step()).chats == 1
    assert summarizer.calls > 0 and (await engine.prompt_view(chat)).boundary > 0
