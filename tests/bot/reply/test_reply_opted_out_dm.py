"""A person who opted out of DM memory and writes to Eva in a DM is answered, without memory,
as a server answers them, and neither their message nor the reply is logged."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.reply.cog import OPTED_OUT_DM_LINE
from memory.storage.models import Chat, Message, UsageEntry
from tests.worlds.reply_fixtures import fake, settings, simcord_bot, world
from tests.worlds.reply_world import World, user_text

__all__ = ["fake", "settings", "simcord_bot", "world"]  # fixtures


async def dm_rows(sessions: async_sessionmaker[AsyncSession]) -> tuple[int, int]:
    async with sessions() as s:
        chats = await s.scalar(select(func.count()).select_from(Chat).where(Chat.kind == "dm"))
        dm_messages = select(Chat.id).where(Chat.kind == "dm")
        messages = await s.scalar(select(func.count()).where(Message.chat_id.in_(dm_messages)))
    return int(chats or 0), int(messages or 0)


async def test_an_opted_out_person_is_answered_in_dms_without_memory_and_nothing_is_logged(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    alice = world.alice.user
    await alice.send_dm("my locker code is 4417")  # remembered: she has not opted out yet
    assert (await dm_rows(sessions))[1] >= 1
    await world.engine.erase_author(None, alice.id)  # /forget-me stop_remembering:True in DMs
    await world.engine.opt_out(None, alice.id)
    assert await dm_rows(sessions) == (0, 0)
    world.later()
    world.fake.script.push_text("Hi! Happy to help.", match="reply")
    await alice.send_dm("are you still there?")
    answers = [m.content for m in alice.dm_channel.history() if m.author.id == world.me.id]
    assert answers[-1] == f"Hi! Happy to help.\n\n{OPTED_OUT_DM_LINE}"
    body = world.replies()[-1].body
    assert [tool["name"] for tool in body["tools"]] == ["forget_me"]  # no zoom, no recall
    shown = user_text(body)
    assert "are you still there?" in shown and "4417" not in shown
    assert await dm_rows(sessions) == (0, 0)  # neither her message nor the reply was logged
    async with sessions() as s:  # the turn is paid for, as a DM's: no guild, no chat kept
        rows = (await s.execute(select(UsageEntry.kind, UsageEntry.guild_id, UsageEntry.chat_id))).all()
    assert ("reply", None, None) in [tuple(r) for r in rows]
