"""An import of a channel is a copy of it: deleting the channel (or the bot leaving its guild)
erases the import too, while the live chat and the import stay separate memories."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory import ImportJob
from memory.imports.fields import ImportFormatError
from memory.storage.log import ChatKey
from memory.storage.models import Chat
from memory.text.records import ExportOrigin, ImportedMessage
from tests.memory.helpers import make_engine, message

Sessions = async_sessionmaker[AsyncSession]
CHANNEL, GUILD = 555000111, 77000222


async def imported_copy(engine: object, sessions: Sessions, name: str, channel: int, guild: int) -> int:
    chat = await engine.ensure_chat(ChatKey("imported", name))  # type: ignore[attr-defined]
    async with sessions() as s, s.begin():  # what `eva import` of a DCE file stores
        await s.execute(update(Chat).where(Chat.id == chat).values(guild_id=guild, source_channel_id=channel))
    await engine.append_many(chat, [message(k) for k in range(6)])  # type: ignore[attr-defined]
    return chat


async def names(sessions: Sessions) -> list[str]:
    async with sessions() as s:
        return list((await s.scalars(select(Chat.name).order_by(Chat.name))).all())


async def test_deleting_a_channel_erases_its_imports(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    live = await engine.ensure_chat(ChatKey("text", "general", discord_id=CHANNEL, guild_id=GUILD))
    await engine.append_many(live, [message(k) for k in range(6)])
    await imported_copy(engine, sessions, "general-2025", CHANNEL, GUILD)
    await imported_copy(engine, sessions, "elsewhere", CHANNEL + 1, GUILD)
    assert await names(sessions) == ["elsewhere", "general", "general-2025"]

    report = await engine.forget_discord_chat(CHANNEL)
    assert report.chats == 2 and report.messages == 12
    assert await names(sessions) == ["elsewhere"]

    await engine.forget_guild(GUILD)
    assert await names(sessions) == []


async def test_an_import_whose_records_repeat_a_snowflake_writes_nothing(sessions: Sessions) -> None:
    """The readers refuse a repeated id first; behind them, the write itself never lets the log
    skip a record (a skipped record would shift every later reply by one)."""
    engine, _, _ = make_engine(sessions)
    when = datetime(2026, 3, 1, tzinfo=UTC)

    def record(snowflake: int, words: str, reply_to: int | None = None) -> ImportedMessage:
        return ImportedMessage(
            author_id=41, author_name="pia", is_bot=False, created_at=when, edited_at=None, content=words,
            attachments=(), reply_to_source=None if reply_to is None else str(reply_to),
            source_id=str(snowflake), snowflake=snowflake,
        )  # fmt: skip

    records = [record(11, "one"), record(12, "two"), record(11, "one again"), record(13, "re", reply_to=12)]
    with pytest.raises(ImportFormatError, match=r"^message id 11 is in the export twice; keep one"):
        await engine.import_export("x", ImportJob(ExportOrigin(), iter(records), {}), lambda done: None)
    assert await names(sessions) == []  # the import's one transaction left nothing, not even the chat
