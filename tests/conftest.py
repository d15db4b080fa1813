"""Shared fixtures: one fresh PostgreSQL database per test run, migrated once; each test
gets clean tables. For the whole-process tests: a working folder, both HTTP fakes, and the
two together with the database (``processes``: start `eva` on them).

The server is the embedded PostgreSQL 18 (the product's default), or the server named by
TEST_DATABASE_URL (a database on it is created for the run and dropped afterwards).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import structlog
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from memory.storage import migrate
from memory.storage.database import create_database, drop_database, make_engine, make_sessions, with_database
from memory.storage.embedded import EmbeddedPostgres
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.worlds.eva_process import EmbeddedFolder, EvaProcess, ProcessWorld

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"

TABLES = (
    "settings_audit",
    "dashboard_links",
    "guild_settings",
    "rate_marks",
    "reconcile_cursors",
    "usage_ledger",
    "opt_outs",
    "memory_rows",
    "nodes",
    "messages",
    "chats",
)


@pytest.fixture(autouse=True)
def isolated_logging() -> Iterator[None]:
    """Each test starts with the logging the one before it found. A test that runs a command
    in-process (bench.logs or bot.log_setup's configure_logging) installs a WARNING filter and
    new root handlers; left in place, a later test that captures INFO events sees none, and
    under pytest-randomly's order which test that is changes from run to run."""
    structlog_config = dict(structlog.get_config())
    structlog_config["processors"] = list(structlog_config["processors"])
    root = logging.getLogger()
    root_handlers, root_level = root.handlers[:], root.level
    levels = {name: logger.level for name, logger in logging.root.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}  # fmt: skip
    try:
        yield
    finally:
        structlog.configure(**structlog_config)
        root.handlers[:] = root_handlers
        root.setLevel(root_level)
        for name, logger in logging.root.manager.loggerDict.items():
            if isinstance(logger, logging.Logger):
                logger.setLevel(levels.get(name, logging.NOTSET))


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    """An admin URL on a server that lives for the whole run."""
    configured = os.environ.get("TEST_DATABASE_URL")
    if configured:
        yield configured
        return
    folder = Path(tempfile.mkdtemp(prefix="eva-test-pg-"))
    server = EmbeddedPostgres(folder, delete_on_stop=True)
    try:
        server.start(database="postgres")
        yield server.admin_url()
    finally:
        server.stop()  # deletes the server's data (folder/pg), not the folder made for it
        shutil.rmtree(folder, ignore_errors=True)
        # Loudly: every run used to leave an empty eva-test-pg-* folder in the temp directory.
        if folder.exists():
            raise RuntimeError(f"the test server's folder {folder} is still there after the run")


@pytest.fixture(scope="session")
async def database_url(postgres_admin_url: str) -> AsyncIterator[str]:
    name = f"eva_test_{uuid.uuid4().hex[:10]}"
    await create_database(postgres_admin_url, name)
    url = with_database(postgres_admin_url, name)
    engine = make_engine(url)
    await migrate.upgrade(engine)
    await engine.dispose()
    try:
        yield url
    finally:
        await drop_database(postgres_admin_url, name)


@pytest.fixture(scope="session")
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database_url)
    yield engine
    await engine.dispose()


@pytest.fixture
async def sessions(engine: AsyncEngine) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """A session factory on clean tables (each test starts from an empty database)."""
    async with engine.begin() as conn:
        await conn.execute(text(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE"))
    yield make_sessions(engine)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared chat data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def workdir() -> Iterator[Path]:
    """The process's working folder (and DATA_DIR under it). Not pytest's tmp_path: pytest
    runs in other processes prune those folders, embedded database included."""
    folder = Path(tempfile.mkdtemp(prefix="eva-test-process-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def embedded_folder(workdir: Path) -> Iterator[EmbeddedFolder]:
    """DATA_DIR (under workdir) of an `eva` on its own embedded PostgreSQL. At the end a server a
    killed or failed run left behind is stopped, before workdir's folder is removed."""
    folder = EmbeddedFolder.under(workdir)
    try:
        yield folder
    finally:
        folder.stop_orphaned_server()


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeDiscord, FakeAnthropic]]:
    async with FakeDiscord() as discord_fake, FakeAnthropic() as anthropic_fake:
        yield discord_fake, anthropic_fake


@pytest.fixture
async def processes(
    fakes: tuple[FakeDiscord, FakeAnthropic], workdir: Path, database_url: str
) -> AsyncIterator[ProcessWorld]:
    started: list[EvaProcess] = []
    yield ProcessWorld(*fakes, workdir, database_url, started)
    for process in started:
        process.kill()
