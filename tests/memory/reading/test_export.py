"""The export of one person (memory/reading/export.py) and the time marks that limit it
(memory/policy/rate_marks.py), on real PostgreSQL: exactly their kept messages, the limit held
by the database for every process, and no mark left after their erasure."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory import EXPORT_MARK, JOIN_IN_MARK, MemoryConfig, MemoryEngine, NewMessage, SimulatedClock
from memory.storage.log import ChatKey
from memory.storage.models import RateMark

ALICE, BOB, GUILD = 111, 222, 900
T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def said(author: int, k: int, text: str) -> NewMessage:
    name = {ALICE: "alice", BOB: "bob"}[author]
    return NewMessage(
        author_name=name,
        author_id=author,
        created_at=T0 + timedelta(minutes=k),
        content=text,
        snowflake=5000 + k,
    )


async def test_export_everywhere_holds_only_the_persons_words_in_every_chat(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine = MemoryEngine(sessions, MemoryConfig(), clock=SimulatedClock(T0))
    general = await engine.ensure_chat(ChatKey("text", "general", discord_id=1, guild_id=GUILD))
    dm = await engine.ensure_chat(ChatKey("dm", "dm-alice", discord_id=2, recipient_id=ALICE))
    await engine.append_many(
        general,
        [said(ALICE, 0, "alice one"), said(BOB, 1, "bob canary c0ffee"), said(ALICE, 2, "alice gone")],
    )
    await engine.append_many(dm, [said(ALICE, 3, "alice in dm")])
    await engine.erase_messages(general, [5002])
    everything = json.loads((await engine.export_person(ALICE, None, everywhere=True)).render())
    assert [(m["chat"], m["text"]) for m in everything["messages"]] == [
        ("general", "alice one"),
        ("dm-alice", "alice in dm"),
    ]
    assert "c0ffee" not in json.dumps(everything)
    server = await engine.export_person(ALICE, GUILD)
    assert [m.text for m in server.messages] == ["alice one"] and server.scope == "server"
    dms = await engine.export_person(ALICE, None)
    assert [m.text for m in dms.messages] == ["alice in dm"] and "delete our whole DM memory" in dms.erasure


async def test_a_mark_holds_for_every_process_and_an_erasure_removes_the_persons(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    clock = SimulatedClock(T0)
    first, second = (MemoryEngine(sessions, MemoryConfig(), clock=clock) for _ in range(2))  # two processes
    hour = timedelta(hours=1)
    assert await first.claim_mark(EXPORT_MARK, ALICE, hour)
    assert not await second.claim_mark(EXPORT_MARK, ALICE, hour)
    assert await second.mark_wait(EXPORT_MARK, ALICE, hour) == 3600
    assert await second.claim_mark(EXPORT_MARK, BOB, hour)  # per person
    assert await second.claim_mark(JOIN_IN_MARK, 77, hour)  # a channel's mark
    clock.advance(3599)
    assert not await first.claim_mark(EXPORT_MARK, ALICE, hour)
    clock.advance(1)
    assert await first.claim_mark(EXPORT_MARK, ALICE, hour)
    await first.erase_author(GUILD, ALICE)
    await first.erase_author_everywhere(BOB)
    async with sessions() as s:
        left = (await s.execute(select(RateMark.kind, RateMark.scope))).all()
        assert [tuple(r) for r in left] == [(JOIN_IN_MARK, 77)]
        assert (
            await s.scalar(select(func.count()).select_from(RateMark).where(RateMark.scope.in_([ALICE, BOB])))
            == 0
        )
