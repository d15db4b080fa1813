"""The real EvaBot (ingest only) against the local Discord fake over TCP, started and stopped
like a process would be: each start is a new bot on the same database, and while it is
stopped Discord's events reach nobody (its session ended with the close)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.client import EvaBot
from bot.gateway.ingest import Ingest
from bot.gateway.running import INGEST_COG, ingest_of
from bot.gateway.walk import Reconciler
from bot.services import Services
from memory.storage.models import Chat, Message
from tests.fakes.discord_api import FakeDiscord, discord_on_fake
from tests.worlds.eva_process import eventually as poll

T = TypeVar("T")
WITHIN = 15.0


async def eventually(check: Callable[[], Awaitable[T | None]], within: float = WITHIN) -> T:
    """tests/worlds/eva_process.py's, with this world's longer wait and a 20 ms poll."""
    return await poll(check, within, every=0.02)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with discord_on_fake() as d:
        yield d


@dataclass
class Running:
    bot: EvaBot
    runner: asyncio.Task[None]

    @property
    def ingest(self) -> Ingest:
        found = ingest_of(self.bot)
        assert isinstance(found, Ingest)
        return found

    @property
    def reconciler(self) -> Reconciler:
        cog: Any = self.bot.get_cog(INGEST_COG)  # its class is the extension's own (test_backfill.py)
        found = cog.reconciler
        assert type(found).__name__ == Reconciler.__name__  # by name: see the comment above
        return found

    async def settled(self) -> None:
        """Everything queued is written (backfills, reconciliation pages, live messages)."""
        assert await self.ingest.flush(timeout=WITHIN)

    async def stop(self) -> None:
        await self.bot.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.runner, WITHIN)


async def start_bot(services: Services) -> Running:
    bot = EvaBot(services, extensions=("bot.gateway.cog",), guild_ready_timeout=0.05)
    runner = asyncio.create_task(bot.start("test-token"))
    running = Running(bot, runner)

    async def opened() -> bool:
        if runner.done():
            runner.result()  # raise what stopped it
        ingest = ingest_of(bot)
        return isinstance(ingest, Ingest) and ingest.is_open and bot.is_ready()

    await eventually(opened)
    await running.settled()
    return running


@contextlib.asynccontextmanager
async def running(services: Services) -> AsyncIterator[Running]:
    """A bot started for the block, stopped after it."""
    bot = await start_bot(services)
    try:
        yield bot
    finally:
        await bot.stop()


async def first_run(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession], *said: tuple[int, str]
) -> list[dict[str, Any]]:
    """A bot started, each (author id, text) posted in general and logged, the bot stopped."""
    bot = await start_bot(services)
    posted = [fake.chat.post_user_message(fake.ids.general, author, text) for author, text in said]
    await eventually(lambda: row_of(sessions, posted[-1]["id"]))
    await bot.stop()
    return posted


async def row_of(sessions: async_sessionmaker[AsyncSession], snowflake: int | str) -> Message | None:
    async with sessions() as s:
        return await s.scalar(select(Message).where(Message.snowflake == int(snowflake)))


async def chats_of_guild(sessions: async_sessionmaker[AsyncSession], guild_id: int) -> list[int]:
    async with sessions() as s:
        return list((await s.scalars(select(Chat.id).where(Chat.guild_id == guild_id))).all())
