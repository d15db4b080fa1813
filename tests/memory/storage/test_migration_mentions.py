"""Migration 0006 on a database with history: messages logged before it hold their mentions
raw (``<@123>``); the upgrade finds those ids, so an erasure reaches them too."""

from __future__ import annotations

from sqlalchemy import text

from memory.config import MemoryConfig
from memory.engine import MemoryEngine
from memory.storage import migrate
from memory.storage.database import create_database, drop_database, make_engine, make_sessions, with_database

PIA, MAX = 1577000000000000001, 1577000000000000002


async def test_upgrade_finds_the_raw_mentions_of_old_messages(postgres_admin_url: str) -> None:
    await create_database(postgres_admin_url, "eva_mentions_upgrade")
    engine = make_engine(with_database(postgres_admin_url, "eva_mentions_upgrade"))
    try:
        await migrate.upgrade(engine, "0001")
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO chats (id, discord_id, guild_id, kind, name, next_index) "
                    "VALUES (1, 555, 77, 'text', 'general', 4)"
                )
            )
            await conn.execute(text("INSERT INTO memory_rows (chat_id) VALUES (1)"))
            for idx, body in enumerate(
                [
                    f"did <@{MAX}> pay you back? ask <@!{PIA}> and <@{MAX}>",
                    "no mentions here, just <#123> and <@&456>",
                    "<@99999999999999999999> is not an id (past bigint)",
                    None,  # an erased slot
                ]
            ):
                await conn.execute(
                    text(
                        "INSERT INTO messages (chat_id, idx, author_name, created_at, text) "
                        "VALUES (1, :i, 'Lo', now(), :t)"
                    ),
                    {"i": idx, "t": body},
                )
        await migrate.upgrade(engine)
        async with engine.connect() as conn:
            found = (
                await conn.execute(text("SELECT idx, mention_ids, mention_names FROM messages ORDER BY idx"))
            ).all()
        assert [tuple(row) for row in found] == [
            (0, [MAX, PIA], ["", ""]),
            (1, None, None),
            (2, None, None),
            (3, None, None),
        ]
        report = await MemoryEngine(make_sessions(engine), MemoryConfig()).erase_author(77, MAX)
        assert report.mentions == 1
        async with engine.connect() as conn:
            body = await conn.scalar(text("SELECT text FROM messages WHERE idx = 0"))
        assert body == f"did @unknown-user pay you back? ask <@!{PIA}> and @unknown-user"
    finally:
        await engine.dispose()
        await drop_database(postgres_admin_url, "eva_mentions_upgrade")
