"""Apply and inspect migrations programmatically (the CLI and the test fixtures use this).

The migration scripts ship inside the ``migrations`` package, so this works from an
installed wheel with no alembic.ini on disk.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine


def alembic_config() -> Config:
    import migrations

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations.__file__).parent))
    return cfg


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def _run(connection: Connection, action: str, target: str) -> None:
    cfg = alembic_config()
    cfg.attributes["connection"] = connection
    if action == "upgrade":
        command.upgrade(cfg, target)
    else:
        command.downgrade(cfg, target)


# A migration may build an index over every message (minutes on a big log): the sessions'
# statement timeout (memory/storage/database.py) is lifted for its transaction only.
_NO_STATEMENT_TIMEOUT = text("SET LOCAL statement_timeout = 0")
# Several `eva run` processes start together (the compose profile `scale`): one migrates, the
# others wait for it and then find the schema at head. Without it the second CREATE TABLE
# fails on the first's name. A one-number key: the compactor's locks use the two-number space.
MIGRATION_LOCK = 0x6576615F6D6967  # "eva_mig"
_TAKE_MIGRATION_LOCK = text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")


async def upgrade(engine: AsyncEngine, target: str = "head") -> None:
    async with engine.begin() as conn:
        await conn.execute(_NO_STATEMENT_TIMEOUT)
        await conn.execute(_TAKE_MIGRATION_LOCK)
        await conn.run_sync(_run, "upgrade", target)


async def downgrade(engine: AsyncEngine, target: str = "base") -> None:
    async with engine.begin() as conn:
        await conn.execute(_NO_STATEMENT_TIMEOUT)
        await conn.run_sync(_run, "downgrade", target)


async def current_revision(engine: AsyncEngine) -> str | None:
    def _current(connection: Connection) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    async with engine.connect() as conn:
        return await conn.run_sync(_current)
