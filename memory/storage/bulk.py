"""The benchmarks' database work outside the message path: one benchmark database, opened and
migrated, with the raw operations building and measuring a million-message chat needs.

None of this runs in the bot. It is here so that bench/ needs no SQL of its own: the bulk load
of the simulated tree (one COPY for every node), storing the
row as the compactor would leave it, VACUUM ANALYZE, the sizes of the tables, the cost of one
commit, and the chats' guild ids the Discord-ingest benchmark lifts while the bot runs.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from memory.storage import migrate
from memory.storage.database import create_database, make_engine, make_sessions, normalize_url, with_database
from memory.storage.embedded import EmbeddedPostgres
from memory.storage.models import Chat, MemoryRow

Sessions = async_sessionmaker[AsyncSession]

NODE_COLUMNS = (
    "chat_id",
    "level",
    "idx",
    "text",
    "bytes",
    "first_at",
    "last_at",
    "by_model",
    "model",
    "tries",
)


@dataclass
class BulkDatabase:
    """A benchmark's connection pool and session factory, with the bulk operations on top."""

    engine: AsyncEngine
    sessions: Sessions

    @classmethod
    async def open(cls, url: str) -> BulkDatabase:
        """The database at ``url``, migrated to the newest schema."""
        engine = make_engine(url)
        await migrate.upgrade(engine)
        return cls(engine, make_sessions(engine))

    @classmethod
    def without_commit_flush(cls, url: str) -> BulkDatabase:
        """A second pool on an open database whose commits do not wait for the WAL flush
        (synchronous_commit = off): the what-if of the ingest figures, never the bot's setting."""
        engine = create_async_engine(
            normalize_url(url),
            connect_args={"server_settings": {"synchronous_commit": "off"}},
            hide_parameters=True,
        )
        return cls(engine, make_sessions(engine))

    async def close(self) -> None:
        await self.engine.dispose()

    async def copy_nodes(self, records: Iterable[Sequence[Any]]) -> None:
        """Tree nodes, one tuple per node in NODE_COLUMNS order, written with one COPY."""
        async with self.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver: Any = raw.driver_connection
            await driver.copy_records_to_table("nodes", records=list(records), columns=list(NODE_COLUMNS))
            await conn.commit()

    async def store_row(self, chat_id: int, parts: Sequence[tuple[int, int]], boundary: int) -> None:
        """The chat's shown row and boundary, as a swap would leave them (version 1)."""
        async with self.sessions() as s, s.begin():
            await s.execute(
                update(MemoryRow)
                .where(MemoryRow.chat_id == chat_id)
                .values(shown=[[level, idx] for level, idx in parts], boundary=boundary, version=1)
            )

    async def vacuum_analyze(self) -> None:
        """What autovacuum would have done on a chat that grew over months."""
        async with self.engine.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(text("VACUUM ANALYZE"))

    async def sizes(self, tables: Sequence[str]) -> tuple[int, dict[str, int], str]:
        """The database's bytes, each table's bytes (with its indexes and TOAST), the server version."""
        async with self.engine.connect() as conn:
            total = int(await conn.scalar(text("SELECT pg_database_size(current_database())")) or 0)
            by_table = {}
            for table in tables:
                size = await conn.scalar(
                    text("SELECT pg_total_relation_size(CAST(:t AS regclass))"), {"t": table}
                )
                by_table[table] = int(size or 0)
            version = str(await conn.scalar(text("SHOW server_version")))
        return total, by_table, version

    async def commit_ms(self, synchronous: str, count: int = 100) -> float:
        """Milliseconds of one one-row INSERT + COMMIT (the floor of a one-message transaction)."""
        async with self.engine.connect() as conn:
            await conn.execute(text(f"SET synchronous_commit = {synchronous}"))
            await conn.commit()
            started = time.perf_counter()
            for k in range(count):
                await conn.execute(text("INSERT INTO opt_outs (guild_id, user_id) VALUES (-1, :k)"), {"k": k})
                await conn.commit()
            elapsed = time.perf_counter() - started
            await conn.execute(text("DELETE FROM opt_outs WHERE guild_id = -1"))
            await conn.commit()
        return round(1000 * elapsed / count, 2)

    async def lift_guilds(self) -> dict[int, int | None]:
        """Take every chat out of its guild; returns each lifted chat's guild for
        :meth:`restore_guilds`."""
        async with self.sessions() as s, s.begin():
            rows = await s.execute(select(Chat.id, Chat.guild_id).where(Chat.guild_id.is_not(None)))
            guilds: dict[int, int | None] = {int(chat): guild_id for chat, guild_id in rows}
            await s.execute(update(Chat).where(Chat.id.in_(guilds)).values(guild_id=None))
        return guilds

    async def restore_guilds(self, guilds: Mapping[int, int | None]) -> None:
        async with self.sessions() as s, s.begin():
            for chat, guild_id in guilds.items():
                await s.execute(update(Chat).where(Chat.id == chat).values(guild_id=guild_id))

    async def set_discord_id(self, chat_id: int, discord_id: int) -> None:
        async with self.sessions() as s, s.begin():
            await s.execute(update(Chat).where(Chat.id == chat_id).values(discord_id=discord_id))


async def fresh_database(url: str | None, prefix: str = "eva_replay") -> tuple[str, EmbeddedPostgres | None]:
    """A new database for one benchmark run: on the given server, or on a throwaway embedded
    one (returned, for the caller to stop)."""
    if url:
        name = f"{prefix}_{int(time.time() * 1000)}"
        await create_database(url, name)
        return with_database(url, name), None
    server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="eva-replay-")), delete_on_stop=True)
    return server.start(database="replay"), server


async def create_run_database(admin_url: str, name: str, *, commit_flush: bool = True) -> str:
    """Database ``name`` on the server at ``admin_url``; its URL. ``commit_flush=False`` makes
    every session on it commit without waiting for the WAL flush (the report's replays: their
    figures count calls and bytes, not commit latency)."""
    await create_database(admin_url, name)
    if not commit_flush:
        engine = create_async_engine(
            normalize_url(admin_url), isolation_level="AUTOCOMMIT", hide_parameters=True
        )
        try:
            async with engine.connect() as conn:
                await conn.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
        finally:
            await engine.dispose()
    return with_database(admin_url, name)
