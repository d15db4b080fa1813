"""Engine and session factory (one session per unit of work; callers own the transaction),
DATABASE_URL checks that never repeat the URL, and the mapping of SQLAlchemy's errors to
memory.errors that MemoryEngine applies to every method (:func:`translates_storage_errors`)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from memory.errors import DatabaseUnavailable, DuplicateEntry, StorageError, TransientStorageError
from memory.storage.embedded import EmbeddedPostgres

P = ParamSpec("P")
T = TypeVar("T")
C = TypeVar("C", bound=type)

POSTGRES_DRIVERS = ("postgresql", "postgresql+asyncpg")
DATABASE_URL_SHAPE = "postgresql://user:password@host:5432/database"
PROBE_SECONDS = 10.0  # asyncpg's own connect timeout is 60 s: too long for a person waiting
# Every session of the engine. The slowest statement of normal work is an erasure's UPDATE of
# one person's messages: erase_author of 10,000 messages in a 1,000,000-message chat takes
# 4.4 s in all (docs/benchmarks.md). A minute is over ten times that, and still frees a
# connection stuck on a hung disk within a minute. VACUUM and migrations lift it (they can
# rightly take longer). Locks are held for one unit of work: an ingest batch ~80 ms, an erasure
# a few seconds; a wait past 10 s means something is stuck, and the waiter gives up with
# SQLSTATE 55P03 (ingest then tries again, a person is told to try again) instead of holding its
# connection and its own locks for as long as the other side takes.
STATEMENT_TIMEOUT_MS = 60_000
LOCK_TIMEOUT_MS = 10_000


@dataclass
class Database:
    """An open database: what a command (or the bot) works with until it closes."""

    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    embedded: EmbeddedPostgres | None


def normalize_url(url: str) -> str:
    """Accept ``postgres://`` and ``postgresql://`` URLs and use the asyncpg driver."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+asyncpg://" + url[len("postgresql://") :]
    return url


def make_engine(
    url: str,
    *,
    pool_size: int = 10,
    statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
    lock_timeout_ms: int = LOCK_TIMEOUT_MS,
) -> AsyncEngine:
    # pool_pre_ping: a database restart must cost one retried checkout, not a failed turn.
    # hide_parameters: a failed statement's exception (and so any log line or traceback made
    # from it) must not carry the bound values, which are message text and names.
    limits = {"statement_timeout": str(statement_timeout_ms), "lock_timeout": str(lock_timeout_ms)}
    return create_async_engine(
        normalize_url(url),
        pool_size=pool_size,
        max_overflow=10,
        pool_pre_ping=True,
        hide_parameters=True,
        connect_args={"server_settings": limits},
    )


def make_sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def database_name(url: str) -> str:
    return make_url(normalize_url(url)).database or ""


def with_database(url: str, name: str) -> str:
    return make_url(normalize_url(url)).set(database=name).render_as_string(hide_password=False)


async def create_database(admin_url: str, name: str) -> None:
    engine = create_async_engine(normalize_url(admin_url), isolation_level="AUTOCOMMIT", hide_parameters=True)
    try:
        async with engine.connect() as conn:
            exists = await conn.scalar(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name})
            if not exists:
                await conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        await engine.dispose()


async def drop_database(admin_url: str, name: str) -> None:
    engine = create_async_engine(normalize_url(admin_url), isolation_level="AUTOCOMMIT", hide_parameters=True)
    try:
        async with engine.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await engine.dispose()


def url_problem(url: str) -> str | None:
    """None for an empty value (the embedded server is used) or a PostgreSQL URL naming a host
    or a socket folder, and a database; else one sentence that never repeats the value (it
    carries a password)."""
    if not url:
        return None
    try:
        parsed = make_url(normalize_url(url))
    except (ArgumentError, ValueError):
        return f"not a URL; expected {DATABASE_URL_SHAPE}"
    if parsed.drivername not in POSTGRES_DRIVERS:
        return f"not a PostgreSQL URL (scheme {parsed.drivername!r}); expected {DATABASE_URL_SHAPE}"
    if not parsed.database:
        return f"names no database; expected {DATABASE_URL_SHAPE}"
    if not parsed.host and "host" not in parsed.query:
        return f"names no host; expected {DATABASE_URL_SHAPE}"
    return None


def database_location(url: str) -> str:
    """host:port/database of a URL, never its user or password."""
    parsed = make_url(normalize_url(url))
    host = parsed.host or parsed.query.get("host") or "local socket"
    return f"{host}:{parsed.port or 5432}/{parsed.database}"


def database_reason(exc: BaseException) -> str:
    """A short phrase for why a connection failed, from the innermost cause (SQLAlchemy wraps
    asyncpg's errors, which wrap the OS's)."""
    seen: BaseException | None = exc
    while seen is not None:
        name = type(seen).__name__
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused (is PostgreSQL running there?)"
        if isinstance(seen, socket.gaierror):
            return "host name not found"
        if isinstance(seen, TimeoutError):
            return f"no answer within {PROBE_SECONDS:.0f} s"
        if name in ("InvalidPasswordError", "InvalidAuthorizationSpecificationError"):
            return "the server refused the user name or password"
        if name == "InvalidCatalogNameError":
            return "that database does not exist"
        seen = getattr(seen, "orig", None) or seen.__cause__ or seen.__context__
    return type(exc).__name__


async def select_one(engine: AsyncEngine, seconds: float = PROBE_SECONDS) -> None:
    """One `SELECT 1` within ``seconds``; raises what the driver raised (or TimeoutError)."""
    async with asyncio.timeout(seconds), engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


# PostgreSQL's SQLSTATE codes (its manual, appendix A) of failures that go away by themselves:
# the same statement succeeds later. Classes: 08 connection exception; 53 insufficient
# resources (53100 disk full, 53200 out of memory, 53300 too many connections).
TRANSIENT_CLASSES = ("08", "53")
TRANSIENT_CODES = frozenset(
    {
        "57014",  # query_canceled: statement_timeout, or a cancel request
        "55P03",  # lock_not_available: lock_timeout
        "40001",  # serialization_failure
        "40P01",  # deadlock_detected
        "40003",  # statement_completion_unknown
        "25P03",  # idle_in_transaction_session_timeout
        "57P01",  # admin_shutdown: the server is stopping
        "57P02",  # crash_shutdown: another backend crashed, the server restarts
        "57P03",  # cannot_connect_now: starting up or in recovery
        "57P05",  # idle_session_timeout
    }
)
# The server or the connection is gone (rather than one statement refused): the two session
# timeouts end the session too.
UNAVAILABLE_CODES = frozenset({"57P01", "57P02", "57P03", "57P05", "25P03"})


def sqlstate(exc: BaseException) -> str | None:
    """PostgreSQL's code for a failed statement: on the driver's error (SQLAlchemy's ``orig``)
    or on the asyncpg error it wraps; None when the server sent none (a dropped connection)."""
    seen: BaseException | None = exc
    for _ in range(8):  # the chain is short: SQLAlchemy -> adapter -> asyncpg
        if seen is None:
            return None
        code = getattr(seen, "sqlstate", None)
        if isinstance(code, str) and len(code) == 5:
            return code
        seen = getattr(seen, "orig", None) or seen.__cause__
    return None


def is_transient_sqlstate(code: str) -> bool:
    return code[:2] in TRANSIENT_CLASSES or code in TRANSIENT_CODES


def storage_error(exc: BaseException) -> StorageError | None:
    """The memory error for a SQLAlchemy one, or None for anything else. By PostgreSQL's
    SQLSTATE: the server or connection gone (class 08, 57P0x, a dropped connection, pool
    exhausted) is DatabaseUnavailable; disk or memory full, a cancelled or timed-out statement,
    a lock timeout, a deadlock or serialization failure TransientStorageError; a unique-key
    clash DuplicateEntry; anything else (bad data, a bug) StorageError."""
    if isinstance(exc, PoolTimeout):
        return DatabaseUnavailable(type(exc).__name__)
    if not isinstance(exc, DBAPIError):
        return None
    kind, code = type(exc).__name__, sqlstate(exc)
    if code is not None:
        if code in UNAVAILABLE_CODES or code.startswith("08"):
            return DatabaseUnavailable(kind, code)
        if is_transient_sqlstate(code):
            return TransientStorageError(kind, code)
        if code == "23505":
            return DuplicateEntry(kind, code)
        if exc.connection_invalidated:
            return DatabaseUnavailable(kind, code)
        return StorageError(kind, code)
    if exc.connection_invalidated or isinstance(exc, OperationalError | InterfaceError):
        return DatabaseUnavailable(kind)
    if isinstance(exc, IntegrityError):
        return DuplicateEntry(kind)
    return StorageError(kind)


def translating(method: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """``method`` raising memory errors instead of SQLAlchemy's (the original is the cause)."""

    @functools.wraps(method)
    async def translated(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await method(*args, **kwargs)
        except Exception as exc:
            mapped = storage_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    return translated


def translates_storage_errors(cls: C) -> C:
    """Every public coroutine method of ``cls`` and its bases wrapped by :func:`translating`,
    so the engine's callers see memory errors only (the most derived definition of each name)."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        for name, value in list(vars(klass).items()):
            if name in seen:
                continue
            seen.add(name)
            if not name.startswith("_") and inspect.iscoroutinefunction(value):
                setattr(cls, name, translating(value))
    return cls
