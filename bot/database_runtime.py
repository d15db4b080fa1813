"""Open the database a command needs: the configured server, or the embedded default."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.settings import Settings
from memory.database import make_engine, make_sessions
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
        yield Database(engine=engine, sessions=make_sessions(engine), embedded=embedded)
    finally:
        await engine.dispose()
        if embedded is not None:
            embedded.stop()
