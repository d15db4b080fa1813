"""Open the database a command needs: the configured server, or the embedded default."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.errors import ServiceUnreachable
from bot.settings import Settings
from memory.database import (
    Database,
    database_location,
    database_reason,
    make_engine,
    make_sessions,
    select_one,
)
from memory.embedded import EmbeddedPostgres

__all__ = ["Database", "open_database", "probe"]


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
    db = Database(engine=engine, sessions=make_sessions(engine), embedded=embedded)
    try:
        if embedded is None:
            await probe(db, url)
        yield db
    finally:
        await engine.dispose()
        if embedded is not None:
            embedded.stop()


async def probe(db: Database, url: str) -> None:
    """One `SELECT 1`, so that an unreachable DATABASE_URL is one clear line before any work
    starts (ServiceUnreachable), not a driver traceback from wherever the first query is."""
    try:
        await select_one(db.engine)
    except Exception as exc:
        raise ServiceUnreachable(
            f"cannot reach the database at DATABASE_URL ({database_location(url)}): {database_reason(exc)}"
        ) from exc
