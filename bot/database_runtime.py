"""Open the database a command needs: the configured server, or the embedded default."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.errors import ServiceUnreachable
from bot.settings import Settings
from memory.database import make_engine, make_sessions, normalize_url
from memory.embedded import EmbeddedPostgres


@dataclass
class Database:
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    embedded: EmbeddedPostgres | None


@asynccontextmanager
async def open_database(settings: Settings) -> AsyncIterator[Database]:
    """Start the embedded server when DATABASE_URL is unset; stop it on the way out,
    whatever happens in between (including cancellation by a signal handler)."""
    embedded: EmbeddedPostgres | None = None
    if settings.database_url is None or not settings.database_url.get_secret_value():
        embedded = EmbeddedPostgres(settings.data_dir)
        url = embedded.start()
    else:
        url = settings.database_url.get_secret_value()
    engine = make_engine(url)
    try:
        if embedded is None:
            await probe(engine, url)
        yield Database(engine=engine, sessions=make_sessions(engine), embedded=embedded)
    finally:
        await engine.dispose()
        if embedded is not None:
            embedded.stop()


PROBE_SECONDS = 10.0  # asyncpg's own connect timeout is 60 s: too long for a person waiting


async def probe(engine: AsyncEngine, url: str) -> None:
    """One `SELECT 1`, so that an unreachable DATABASE_URL is one clear line before any work
    starts (ServiceUnreachable), not a driver traceback from wherever the first query is."""
    try:
        async with asyncio.timeout(PROBE_SECONDS), engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:
        raise ServiceUnreachable(
            f"cannot reach the database at DATABASE_URL ({database_location(url)}): {database_reason(exc)}"
        ) from exc


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
