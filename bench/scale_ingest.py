"""Ingest through the bot's own path at scale: gateway message -> channel queue -> log.

The bot runs on SimCord (real discord.py against a simulated Discord, the test suite's
harness) with only the ingest extension, on the benchmark's database; its channel is made
the 1M-message chat (its Discord id is set to the simulated channel's), so every append
meets the full-size indexes. The messages are created first with the queue's gate shut and
taken out again, so building them is not timed. Then a producer hands them to
``Ingest.queue_message`` one per event-loop turn, as the gateway would hand messages that
arrive as fast as the writer takes them: whatever queued during one write is the next batch.
Timed: from the first message queued to the last one committed (``Ingest.flush``).

The one module of bench/ that imports the bot outside bot/core/ (tests/structure/test_layers.py):
it measures the bot's own ingest. So that the other benchmarks load without Discord, the entry
points that run the scale benchmark (bench/scale.py, bench/report.py) hand this function to it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from pydantic import SecretStr

from bot.app import build_services
from bot.client import EvaBot
from bot.database import Database
from bot.gateway.ingest import Append, Ingest
from bot.settings import Settings
from memory import BulkDatabase

PEOPLE = 7


async def ingest_through_bot(
    database: BulkDatabase, chat_id: int, texts: Sequence[str]
) -> tuple[float, float]:
    """Messages per second through the bot's ingest, and the mean messages per batch."""
    # The test suite's simulated Discord, installed with the [test] extra: a test harness, not
    # test code (nothing under bench/ imports tests/), and needed only by this figure.
    import simcord

    secret = SecretStr("bench")  # nothing here calls Discord or Anthropic
    settings = Settings(_env_file=None, discord_token=secret, anthropic_api_key=secret)  # type: ignore[call-arg]
    services = build_services(
        settings, Database(engine=database.engine, sessions=database.sessions, embedded=None)
    )
    bot = EvaBot(services, extensions=("bot.gateway.cog",))
    # SimCord's READY lists no guilds, and a guild missing from READY is forgotten like one that
    # removed the bot while it was away: the benchmark's chats stand outside any guild while the
    # bot runs, and get their guild back afterwards (the erasure figure erases by guild).
    guilds = await database.lift_guilds()
    try:
        async with simcord.run(bot) as env:
            ingest = services.ingest
            assert isinstance(ingest, Ingest)
            guild = env.create_guild()
            channel = guild.create_text_channel("scale")
            await database.set_discord_id(chat_id, channel.id)
            people = [guild.add_member(env.create_user(f"person{k}")) for k in range(PEOPLE)]
            ingest.is_open = False
            for k, body in enumerate(texts):
                await people[k % PEOPLE].send(channel, body or ".")
            queue = ingest.queues[channel.id]
            messages = [op.message for op in queue.ops if isinstance(op, Append)]
            queue.ops.clear()
            ingest.buffered = 0
            ingest.is_open = True
            batches = 0
            memory = ingest.engine
            one, several = memory.append, memory.append_replies

            async def append(*args: Any, **kwargs: Any) -> Any:
                nonlocal batches
                batches += 1
                return await one(*args, **kwargs)

            async def append_replies(*args: Any, **kwargs: Any) -> Any:
                nonlocal batches
                batches += 1
                return await several(*args, **kwargs)

            memory.append, memory.append_replies = append, append_replies  # type: ignore[method-assign]
            started = time.perf_counter()
            for message in messages:
                ingest.queue_message(message)
                await asyncio.sleep(0)
            await ingest.flush()
            elapsed = time.perf_counter() - started
            memory.append, memory.append_replies = one, several  # type: ignore[method-assign]
    finally:
        await services.claude.close()
        await database.restore_guilds(guilds)
    return round(len(messages) / elapsed, 1), round(len(messages) / max(batches, 1), 1)
