"""A storage error never drops a message: what goes away by itself (a cancelled or timed-out
statement, a lock timeout, a deadlock, a serialization failure, a full disk, the server out of
memory, a lost connection) is tried again with backoff until it is written, once, in order; a
channel whose writes keep failing for five minutes makes way for a backfill from its last
logged message; only a message that can never be stored is skipped, alone, with a log line
of ids (bot/gateway/ingest.py, memory.storage.database.storage_error).

Each failure happens at the ingest's own write (its first statement, the chat row's lock),
through the real discord.py on SimCord and the real PostgreSQL: a real statement timeout,
lock timeout, cancel request, deadlock and terminated connection where PostgreSQL can make
one on demand; the server itself raising the SQLSTATE where it cannot (a serialization
failure needs SERIALIZABLE transactions, which ingest does not use; a full disk is made for
real by tests/hardening/test_disk_full.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import discord
import pytest
from sqlalchemy import event, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker
from structlog.testing import capture_logs

from bot.gateway.ingest import Ingest
from bot.gateway.ops import Backfill
from bot.services import Services
from memory.storage.models import Chat, Message
from tests.bot.conftest import Room, ingest_of
from tests.bot.gateway.test_backfill import DiscordHistory, history
from tests.worlds.eva_process import eventually

__all__ = ["history"]  # the fixture

Sessions = async_sessionmaker[AsyncSession]
BURST = 40


def the_write(statement: str) -> bool:
    """The first statement of ingest's write (memory.storage.log.append_replies): the chat row's lock."""
    return statement.lstrip().startswith("SELECT chats.next_index") and "FOR UPDATE" in statement


def raised_by_the_server(code: str) -> str:
    return f"DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '{code}'; END $$"


@dataclass
class Fault:
    """One way a write fails, and how it stops failing (``release``, awaited by ingest's retry wait)."""

    name: str
    engine: AsyncEngine
    chat_id: int
    attempts: int = 0
    waits: list[float] = field(default_factory=list)
    holder: AsyncConnection | None = None
    helpers: list[asyncio.Task[Any]] = field(default_factory=list)
    fallback: asyncio.Task[None] | None = None

    async def arm(self) -> None:
        """Before the burst is written: hold what the failure needs held."""
        if self.name in ("statement timeout", "lock timeout", "cancel", "deadlock"):
            self.holder = await self.engine.connect()
            await self.holder.begin()
            if self.name == "deadlock":
                # Take the slot ingest's INSERT will need: it waits on us while holding the
                # chat row, and we then ask for the chat row.
                await self.holder.execute(text("SET LOCAL deadlock_timeout = '30s'"))  # ingest is the victim
                # No foreign-key check (its KEY SHARE lock on the chat row would make ingest wait
                # at its first statement instead of at its INSERT).
                await self.holder.execute(text("SET LOCAL session_replication_role = replica"))
                slot = await self.holder.scalar(select(Chat.next_index).where(Chat.id == self.chat_id))
                await self.holder.execute(
                    text(
                        "INSERT INTO messages (chat_id, idx, created_at, line_bytes) VALUES (:c, :i, now(), 0)"
                    ),
                    {"c": self.chat_id, "i": slot},
                )
                self.helpers.append(asyncio.create_task(self._close_the_cycle()))
            else:
                await self.holder.execute(select(Chat.id).where(Chat.id == self.chat_id).with_for_update())
                if self.name == "cancel":
                    self.helpers.append(asyncio.create_task(self._cancel_the_waiter()))
            self.fallback = asyncio.create_task(self.release_anyway())

    def on_statement(self, conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if not the_write(statement) or self.attempts:
            return
        self.attempts += 1
        if self.name == "statement timeout":
            cursor.execute("SET LOCAL lock_timeout = 0")
            cursor.execute("SET LOCAL statement_timeout = '200ms'")  # the lock wait outlasts it
        elif self.name == "lock timeout":
            cursor.execute("SET LOCAL lock_timeout = '200ms'")
        elif self.name == "connection lost":
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        elif self.name in CODES:
            cursor.execute(raised_by_the_server(CODES[self.name]))

    async def retry_wait(self, seconds: float) -> None:
        self.waits.append(seconds)
        for task in self.helpers:
            await task
        await self.release()

    async def release(self) -> None:
        holder, self.holder = self.holder, None
        if holder is not None:
            await holder.rollback()
            await holder.close()

    async def release_anyway(self) -> None:
        """If ingest never tries again (the guarantee broken), let the rest of the burst through
        so that the test ends by failing, not by waiting out every lock timeout."""
        await asyncio.sleep(3)
        for task in self.helpers:
            await asyncio.wait({task}, timeout=10)
        await self.release()

    async def _waiter(self) -> int:
        async def found() -> int | None:
            async with self.engine.connect() as probe:
                return await probe.scalar(
                    text(
                        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                        " AND pid <> pg_backend_pid() AND state = 'active'"
                    )
                )

        return await eventually(found, within=10, every=0.01)

    async def _cancel_the_waiter(self) -> None:
        pid = await self._waiter()
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT pg_cancel_backend(:pid)"), {"pid": pid})

    async def _close_the_cycle(self) -> None:
        await self._waiter()
        assert self.holder is not None
        await self.holder.execute(select(Chat.id).where(Chat.id == self.chat_id).with_for_update())


# Failures PostgreSQL cannot be made to produce on demand here: the server raises their code.
CODES = {"serialization failure": "40001", "disk full": "53100", "out of memory": "53200"}
# Each with the SQLSTATE PostgreSQL's manual gives it (appendix A).
EXPECTED_SQLSTATE = {
    "statement timeout": "57014",
    "lock timeout": "55P03",
    "cancel": "57014",
    "deadlock": "40P01",
    "serialization failure": "40001",
    "disk full": "53100",
    "out of memory": "53200",
    "connection lost": "08003",  # connection_does_not_exist: the server ended it
}


@pytest.fixture
def bind(services: Services) -> AsyncEngine:
    return services.engine.sessions.kw["bind"]  # type: ignore[no-any-return]


@pytest.fixture
def listening(bind: AsyncEngine) -> Iterator[Callable[[Callable[..., None]], None]]:
    added: list[Callable[..., None]] = []

    def listen(fn: Callable[..., None]) -> None:
        event.listen(bind.sync_engine, "before_cursor_execute", fn)
        added.append(fn)

    yield listen
    for fn in added:
        event.remove(bind.sync_engine, "before_cursor_execute", fn)


def gate(ingest: Ingest, is_open: bool) -> None:
    """Closed: messages wait in their queue (a burst arriving while a write commits)."""
    ingest.is_open = is_open
    if is_open:
        ingest.kick_all()


async def logged(sessions: Sessions, channel_id: int) -> list[Message]:
    async with sessions() as s:
        chat_id = await s.scalar(select(Chat.id).where(Chat.discord_id == channel_id))
        rows = await s.scalars(select(Message).where(Message.chat_id == chat_id).order_by(Message.idx))
        return list(rows.all())


async def burst(room: Room, label: str, count: int = BURST) -> list[discord.Message]:
    alice, bob = room.people("alice", "bob")
    sent: list[discord.Message] = []
    for k in range(count):
        reply_to = sent[k - 3] if k % 10 == 9 else None
        sent.append(await (alice if k % 2 else bob).send(room.general, f"{label} {k}", reply_to=reply_to))
    return sent


@pytest.mark.parametrize("kind", list(EXPECTED_SQLSTATE))
async def test_each_kind_of_transient_storage_error_loses_nothing(
    kind: str,
    room: Room,
    sessions: Sessions,
    bind: AsyncEngine,
    listening: Callable[[Callable[..., None]], None],
) -> None:
    env, _, general = room
    ingest = ingest_of(env.bot)  # type: ignore[arg-type]
    first = await room.member("cara").send(general, "before the burst")
    assert await ingest.flush(timeout=5)
    chat_id = (await ingest.engine.chat_by_discord_id(general.id)).id  # type: ignore[union-attr]

    fault = Fault(kind, bind, chat_id)
    ingest.retry_wait = fault.retry_wait
    gate(ingest, False)
    sent = await burst(room, kind)
    await fault.arm()
    listening(fault.on_statement)
    with capture_logs() as logs:
        gate(ingest, True)
        assert await ingest.flush(timeout=30)

    if fault.fallback is not None:
        fault.fallback.cancel()
    rows = await logged(sessions, general.id)
    assert [r.snowflake for r in rows] == [first.id] + [m.id for m in sent], "each message once, in order"
    assert [r.idx for r in rows] == list(range(BURST + 1))
    assert fault.attempts == 1 and fault.waits == [ingest.retry_seconds]  # failed once, tried again
    assert not [e for e in logs if e["event"] == "ingest.write_failed"]
    retried = [e for e in logs if e["event"] in ("ingest.write_retried", "ingest.database_unavailable")]
    assert [e.get("sqlstate") for e in retried] == [EXPECTED_SQLSTATE[kind]]
    assert ingest.buffered == 0


async def test_a_message_that_can_never_be_stored_is_skipped_alone(
    room: Room, sessions: Sessions, listening: Callable[[Callable[..., None]], None]
) -> None:
    env, _, general = room
    ingest = ingest_of(env.bot)  # type: ignore[arg-type]
    gate(ingest, False)
    sent = await burst(room, "burst", 12)
    unstorable = sent[5].id

    def refuse_that_one(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        rows = parameters if isinstance(parameters, list) else [parameters]
        if statement.lstrip().startswith("INSERT INTO messages") and any(
            isinstance(r, dict | tuple | list) and unstorable in (r.values() if isinstance(r, dict) else r)
            for r in rows
        ):
            cursor.execute(raised_by_the_server("22P05"))  # untranslatable_character: data, not a state

    listening(refuse_that_one)
    with capture_logs() as logs:
        gate(ingest, True)
        assert await ingest.flush(timeout=10)
    assert [r.snowflake for r in await logged(sessions, general.id)] == [
        m.id for m in sent if m.id != unstorable
    ]
    (failed,) = [e for e in logs if e["event"] == "ingest.write_failed"]
    assert failed["message_id"] == unstorable and failed["sqlstate"] == "22P05"
    assert not any("burst" in str(value) for e in logs for value in e.values())  # ids, never text


async def test_a_database_that_stays_unwritable_leaves_the_channel_to_a_backfill(
    room: Room,
    sessions: Sessions,
    history: DiscordHistory,
    listening: Callable[[Callable[..., None]], None],
) -> None:
    env, _, general = room
    ingest = ingest_of(env.bot)  # type: ignore[arg-type]
    first = await room.member("cara").send(general, "before the disk filled")
    assert await ingest.flush(timeout=5)
    full = True
    waited: list[float] = []

    def disk_full(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if full and the_write(statement):
            cursor.execute(raised_by_the_server("53100"))

    async def retry_wait(seconds: float) -> None:
        nonlocal full
        waited.append(seconds)
        q = ingest.queues[general.id]
        if any(isinstance(op, Backfill) for op in q.ops) and ingest.buffered == 0:
            full = False  # space was freed after the messages had left memory

    ingest.retry_wait = retry_wait
    gate(ingest, False)
    sent = await burst(room, "while full")
    listening(disk_full)
    with capture_logs() as logs:
        gate(ingest, True)
        assert await ingest.flush(timeout=30)
    assert sum(waited[:-1]) >= 300 and max(waited) == 8.0  # backing off to 8 s, five minutes of it
    (left,) = [e for e in logs if e["event"] == "ingest.left_to_backfill"]
    assert left["messages"] == BURST
    rows = await logged(sessions, general.id)
    assert [r.snowflake for r in rows] == [first.id] + [m.id for m in sent]  # fetched back from Discord
    assert history.pages >= 1 and ingest.buffered == 0
