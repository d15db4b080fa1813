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
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from memory.errors import DatabaseUnavailable, DuplicateEntry, StorageError

if TYPE_CHECKING:
    from memory.embedded import EmbeddedPostgres

P = ParamSpec("P")
T = TypeVar("T")
C = TypeVar("C", bound=type)

POSTGRES_DRIVERS = ("postgresql", "postgresql+asyncpg")
DATABASE_URL_SHAPE = "postgresql://user:password@host:5432/database"
PROBE_SECONDS = 10.0  # asyncpg's own connect timeout is 60 s: too long for a person waiting


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


def make_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    # pool_pre_ping: a database restart must cost one retried checkout, not a failed turn.
    # hide_parameters: a failed statement's exception (and so any log line or traceback made
    # from it) must not carry the bound values, which are message text and names.
    return create_async_engine(
        normalize_url(url), pool_size=pool_size, max_overflow=10, pool_pre_ping=True, hide_parameters=True
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


def storage_error(exc: BaseException) -> StorageError | None:
    """The memory error for a SQLAlchemy one, or None for anything else: an outage (connection
    refused or dropped mid-statement, pool exhausted) is DatabaseUnavailable, a unique-key
    clash DuplicateEntry, any other failed statement StorageError."""
    if isinstance(exc, IntegrityError):
        return DuplicateEntry(type(exc).__name__)
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated or isinstance(exc, OperationalError | InterfaceError):
            return DatabaseUnavailable(type(exc).__name__)
        return StorageError(type(exc).__name__)
    if isinstance(exc, PoolTimeout):
        return DatabaseUnavailable(type(exc).__name__)
    return None


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
