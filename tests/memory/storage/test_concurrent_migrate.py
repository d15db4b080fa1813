"""Gateways started together (the compose profile `scale`) each migrate at start: one does,
the others wait for its lock and find the schema at head. Three real processes, as alembic's
own state is per process."""

from __future__ import annotations

import asyncio
import sys

from memory.storage import migrate
from memory.storage.database import create_database, drop_database, make_engine, with_database
from tests.worlds.eva_process import REPO

MIGRATE = "import asyncio, sys; from memory.storage import migrate, database as d; \
asyncio.run(migrate.upgrade(d.make_engine(sys.argv[1])))"


async def test_three_processes_migrating_one_fresh_database_at_once_all_succeed(
    postgres_admin_url: str,
) -> None:
    await create_database(postgres_admin_url, "eva_migrate_race")
    url = with_database(postgres_admin_url, "eva_migrate_race")
    try:
        processes = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-c", MIGRATE, url, cwd=REPO, stderr=asyncio.subprocess.PIPE
            )
            for _ in range(3)
        ]
        outcomes = [(await p.wait(), (await p.stderr.read()).decode()[-300:]) for p in processes if p.stderr]
        assert [code for code, _ in outcomes] == [0, 0, 0], outcomes
        engine = make_engine(url)
        assert await migrate.current_revision(engine) == migrate.head_revision()
        await engine.dispose()
    finally:
        await drop_database(postgres_admin_url, "eva_migrate_race")
