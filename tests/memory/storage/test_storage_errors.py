"""Storage errors leave the engine as "try again" or "can never be stored", by PostgreSQL's
SQLSTATE (memory.storage.database.storage_error), and every session of the engine carries a statement
and a lock timeout (memory.storage.database.make_engine).

The expected classes are written here from PostgreSQL's manual (appendix A, "PostgreSQL Error
Codes"), not read from the implementation; the server itself raises each code."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from memory.errors import DatabaseUnavailable, DuplicateEntry, StorageError, TransientStorageError
from memory.storage.database import translating

Sessions = async_sessionmaker[AsyncSession]

# The server or the connection is gone: connection_exception and its kin, admin_shutdown,
# crash_shutdown, cannot_connect_now, and the two timeouts that end the session
# (idle_in_transaction_session_timeout, idle_session_timeout).
UNAVAILABLE = ["08000", "08003", "08006", "08001", "57P01", "57P02", "57P03", "25P03", "57P05"]
# The statement was refused for now: disk_full, out_of_memory, too_many_connections,
# configuration_limit_exceeded, insufficient_resources, query_canceled (statement_timeout or
# a cancel), lock_not_available (lock_timeout), serialization_failure, deadlock_detected,
# statement_completion_unknown.
TRANSIENT = ["53100", "53200", "53300", "53400", "53000", "57014", "55P03", "40001", "40P01", "40003"]
# The same work fails again: bad data (untranslatable_character, character_not_in_repertoire,
# string_data_right_truncation, not_null_violation), a bug (syntax_error, undefined_column),
# program_limit_exceeded, internal_error.
NEVER = ["22P05", "22021", "22001", "23502", "42601", "42703", "54000", "XX000"]


def raising(code: str) -> str:
    return f"DO $$ BEGIN RAISE EXCEPTION 'raised by the test' USING ERRCODE = '{code}'; END $$"


async def failure_of(sessions: Sessions, statement: str) -> StorageError:
    @translating
    async def run() -> None:
        async with sessions() as s, s.begin():
            await s.execute(text(statement))

    with pytest.raises(StorageError) as caught:
        await run()
    return caught.value


@pytest.mark.parametrize("code", UNAVAILABLE)
async def test_the_server_or_connection_gone_is_unavailable(sessions: Sessions, code: str) -> None:
    error = await failure_of(sessions, raising(code))
    assert type(error) is DatabaseUnavailable and error.sqlstate == code


@pytest.mark.parametrize("code", TRANSIENT)
async def test_what_goes_away_by_itself_is_transient(sessions: Sessions, code: str) -> None:
    error = await failure_of(sessions, raising(code))
    assert type(error) is TransientStorageError and error.sqlstate == code


@pytest.mark.parametrize("code", NEVER)
async def test_what_fails_again_is_a_plain_storage_error(sessions: Sessions, code: str) -> None:
    error = await failure_of(sessions, raising(code))
    assert type(error) is StorageError and error.sqlstate == code
    assert not isinstance(error, TransientStorageError)


async def test_a_unique_clash_is_a_duplicate(sessions: Sessions) -> None:
    assert type(await failure_of(sessions, raising("23505"))) is DuplicateEntry


async def test_a_real_statement_timeout_is_transient(sessions: Sessions) -> None:
    @translating
    async def slow() -> None:
        async with sessions() as s, s.begin():
            await s.execute(text("SET LOCAL statement_timeout = '20ms'"))
            await s.execute(text("SELECT pg_sleep(2)"))

    with pytest.raises(TransientStorageError) as caught:
        await slow()
    assert caught.value.sqlstate == "57014"


async def test_every_session_has_a_statement_and_a_lock_timeout(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        statement = await conn.scalar(
            text("SELECT setting::int FROM pg_settings WHERE name = 'statement_timeout'")
        )
        lock = await conn.scalar(text("SELECT setting::int FROM pg_settings WHERE name = 'lock_timeout'"))
    # Milliseconds: a minute for a statement (10x the slowest erasure measured at 1M messages),
    # 10 s for a lock (a unit of work holds one for seconds at most).
    assert (statement, lock) == (60_000, 10_000)
