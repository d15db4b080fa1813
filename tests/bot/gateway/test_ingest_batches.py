"""What a channel's queue holds is written in one transaction: in order, each message once,
replies resolved inside the batch, and nothing lost or doubled when the database drops the
connection in the middle of a batch."""

from __future__ import annotations

from typing import Any

import discord
import pytest
from sqlalchemy import event, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import bot.gateway.ingest
from bot.gateway.ingest import Ingest
from bot.services import Services
from memory.storage.models import Chat, Message
from tests.bot.conftest import Room, ingest_of

Sessions = async_sessionmaker[AsyncSession]


async def rows_of(sessions: Sessions, channel_id: int) -> list[Message]:
    async with sessions() as s:
        chat_id = await s.scalar(select(Chat.id).where(Chat.discord_id == channel_id))
        rows = await s.scalars(select(Message).where(Message.chat_id == chat_id).order_by(Message.idx))
        return list(rows.all())


def gate(ingest: Ingest, is_open: bool) -> None:
    """Closed: messages wait in their queues (as while a write is committing); open: drain."""
    ingest.is_open = is_open
    if is_open:
        ingest.kick_all()


async def test_a_waiting_queue_is_one_transaction_in_order_once(
    room: Room, services: Services, sessions: Sessions
) -> None:
    env, _, general = room
    alice, bob = room.people("alice", "bob")
    ingest = ingest_of(env.bot)  # type: ignore[arg-type]
    first = await alice.send(general, "first, alone")
    assert await ingest.flush(timeout=5)

    commits: list[int] = []
    event.listen(services.engine.sessions.kw["bind"].sync_engine, "commit", lambda conn: commits.append(1))
    gate(ingest, False)
    sent: list[discord.Message] = []
    for k in range(30):
        reply_to: Any = None
        if k == 7:
            reply_to = sent[3]  # a reply inside the batch
        elif k == 9:
            reply_to = first  # a reply to a message logged before
        sent.append(await (alice if k % 2 else bob).send(general, f"batch one {k}", reply_to=reply_to))
    ingest.queue_message(sent[4])  # a gateway replay inside the batch
    ingest.queue_message(first)  # and one of a message already logged
    assert len(ingest.queues[general.id].ops) == 32
    gate(ingest, True)
    assert await ingest.flush(timeout=10)
    assert len(commits) == 1

    rows = await rows_of(sessions, general.id)
    assert [r.snowflake for r in rows] == [first.id] + [m.id for m in sent]
    assert [r.idx for r in rows] == list(range(31))
    by_snowflake = {r.snowflake: r for r in rows}
    assert by_snowflake[sent[7].id].reply_to == 4  # sent[3] is message #4 (after "first")
    assert by_snowflake[sent[9].id].reply_to == 0
    assert by_snowflake[sent[7].id].text == "batch one 7 (reply to #4)"

    # Across batches: the same messages again, then new ones, in one more batch.
    gate(ingest, False)
    for m in sent[10:20]:
        ingest.queue_message(m)
    later = [await alice.send(general, f"batch two {k}") for k in range(5)]
    gate(ingest, True)
    assert await ingest.flush(timeout=10)
    rows = await rows_of(sessions, general.id)
    assert [r.snowflake for r in rows] == [first.id] + [m.id for m in sent + later]
    assert [r.idx for r in rows] == list(range(36))
    assert ingest.buffered == 0


async def test_a_connection_lost_mid_batch_writes_every_message_once(
    room: Room, services: Services, sessions: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bot.gateway.ingest, "MAX_BATCH", 8)  # 25 messages: batches of 8, 8, 8, 1
    env, _, general = room
    alice = room.member("alice")
    ingest = ingest_of(env.bot)  # type: ignore[arg-type]
    waits: list[float] = []
    while_down: list[discord.Message] = []

    async def retry_wait(seconds: float) -> None:
        waits.append(seconds)
        # Messages keep arriving while the database is away: they queue behind the batch.
        while_down.extend([await alice.send(general, f"while down {k}") for k in range(2)])

    ingest.retry_wait = retry_wait
    await alice.send(general, "before")
    assert await ingest.flush(timeout=5)

    counts = 0

    def drop_the_connection_mid_batch(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        nonlocal counts
        if statement.lstrip().startswith("UPDATE chats"):
            counts += 1
            if counts == 2:  # the second batch's messages are inserted, not committed
                cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    bind = services.engine.sessions.kw["bind"].sync_engine
    event.listen(bind, "before_cursor_execute", drop_the_connection_mid_batch)
    gate(ingest, False)
    sent = [await alice.send(general, f"during {k}") for k in range(25)]
    gate(ingest, True)
    assert await ingest.flush(timeout=10)
    event.remove(bind, "before_cursor_execute", drop_the_connection_mid_batch)

    assert waits == [ingest.retry_seconds]  # one outage, one retry
    rows = await rows_of(sessions, general.id)
    assert [r.text for r in rows] == ["before"] + [f"during {k}" for k in range(25)] + [
        f"while down {k}" for k in range(2)
    ]
    assert [r.snowflake for r in rows][1:] == [m.id for m in sent + while_down]
    assert [r.idx for r in rows] == list(range(28))
    assert ingest.buffered == 0
