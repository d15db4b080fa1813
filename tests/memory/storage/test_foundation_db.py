"""The schema on a real server: migrations up, down to base, up again; extensions present."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from memory.storage import migrate
from memory.storage.database import create_database, drop_database, make_engine, with_database
from memory.storage.models import Base


async def test_models_match_migrations(engine: AsyncEngine) -> None:
    def diff(sync_conn):  # type: ignore[no-untyped-def]
        ctx = MigrationContext.configure(sync_conn, opts={"compare_type": True})
        return compare_metadata(ctx, Base.metadata)

    async with engine.connect() as conn:
        assert await conn.run_sync(diff) == []


async def test_up_down_up(postgres_admin_url: str) -> None:
    await create_database(postgres_admin_url, "eva_updown")
    engine = make_engine(with_database(postgres_admin_url, "eva_updown"))
    try:
        await migrate.upgrade(engine)
        assert await migrate.current_revision(engine) == migrate.head_revision()
        await migrate.downgrade(engine, "base")
        assert await migrate.current_revision(engine) is None
        async with engine.connect() as conn:
            left = await conn.scalar(text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"))
        assert left == 1  # only alembic_version remains
        await migrate.upgrade(engine)
        assert await migrate.current_revision(engine) == migrate.head_revision()
    finally:
        await engine.dispose()
        await drop_database(postgres_admin_url, "eva_updown")


async def test_trigram_and_full_text_work(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        sim = await conn.scalar(text("SELECT similarity('padel', 'paddle')"))
        rank = await conn.scalar(
            text(
                "SELECT ts_rank(to_tsvector('simple', 'padel at Gothia'), plainto_tsquery('simple', 'gothia'))"
            )
        )
    assert sim is not None and sim > 0.2
    assert rank is not None and rank > 0


@pytest.mark.parametrize("table", ["chats", "messages", "nodes", "memory_rows", "opt_outs", "usage_ledger"])
async def test_discord_ids_are_bigint_and_times_tz_aware(engine: AsyncEngine, table: str) -> None:
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = :t"),
                {"t": table},
            )
        ).all()
    types = dict(rows)
    for column, data_type in types.items():
        if column.endswith("_at") or column == "since":
            assert data_type == "timestamp with time zone", column
        if column in ("discord_id", "guild_id", "author_id", "user_id", "snowflake", "parent_id"):
            assert data_type == "bigint", column
