"""Building small memories for tests: an engine with the fake summarizer and small sizes,
so a few hundred messages exercise arming, batches and swaps."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory import build
from memory.clock import SimulatedClock
from memory.config import MemoryConfig
from memory.engine import MemoryEngine
from memory.fakes.summarizer import FakeSummarizer
from memory.storage.log import ChatKey, NewMessage

SMALL = MemoryConfig(
    view_high=4000,
    view_low=2000,
    tail_start=2000,
    tail_keep=500,
    tail_force=4000,
    tail_cap=6000,
    quiet_seconds=1800,
    jobs=4,
    tasks_per_call=2,
    context_bytes=1000,
    min_context_bytes=400,
    trim_slack=0,  # overshoots go back to the model here; tests of the local trim set their own
)
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PEOPLE = ("Pia", "Max", "Lo")


def make_engine(
    sessions: async_sessionmaker[AsyncSession],
    config: MemoryConfig = SMALL,
    summarizer: FakeSummarizer | None = None,
) -> tuple[MemoryEngine, FakeSummarizer, SimulatedClock]:
    summarizer = summarizer or FakeSummarizer(node_bytes=config.node_bytes, tries=config.tries)
    clock = SimulatedClock(START)
    return build(sessions, config, summarizer, clock=clock), summarizer, clock


def message(
    k: int, text: str | None = None, author: str | None = None, *, snowflake: bool = True
) -> NewMessage:
    who = author or PEOPLE[k % len(PEOPLE)]
    body = text if text is not None else f"message {k} from {who} about padel and plans number {k * 7}"
    return NewMessage(
        author_name=who,
        author_id=1000 + PEOPLE.index(who) if who in PEOPLE else 4242,
        created_at=START + timedelta(minutes=k),
        content=body,
        snowflake=(10_000 + k) if snowflake else None,
    )


async def fill(
    engine: MemoryEngine,
    clock: SimulatedClock,
    chat_id: int,
    messages: Sequence[NewMessage],
    *,
    compact_every: int = 1,
) -> None:
    """Append with simulated time, letting the compactor work as the bot's scheduler would."""
    for k, msg in enumerate(messages):
        clock.set(msg.created_at)
        await engine.append(chat_id, msg)
        if k % compact_every == 0:
            await engine.compact(chat_id)


async def settle(engine: MemoryEngine, clock: SimulatedClock, chat_id: int) -> None:
    """A quiet night: everything built and swapped in."""
    clock.advance(engine.config.quiet_seconds + 1)
    await engine.compact(chat_id, until_idle=True)


async def new_chat(
    engine: MemoryEngine, name: str = "general", guild_id: int = 77, discord_id: int = 555
) -> int:
    return await engine.ensure_chat(ChatKey(kind="text", name=name, discord_id=discord_id, guild_id=guild_id))
