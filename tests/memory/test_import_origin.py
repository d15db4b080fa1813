"""An import of a channel is a copy of it: deleting the channel (or the bot leaving its guild)
erases the import too, while the live chat and the import stay separate memories."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.log import ChatKey
from memory.models import Chat
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
