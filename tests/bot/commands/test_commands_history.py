"""/zoom, /recall and every /memory command show what was said in a channel only to people who
may read its history: a member or an admin without Read Message History there cannot read,
through Eva, what came before them (the channel a command is used in as much as a named one)."""

from __future__ import annotations

import discord
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.people import NO_HISTORY_HERE
from memory.errors import UserFacingError
from memory.storage.log import ChatKey
from tests.worlds.commands_world import World, causes, counts, message, reply_text


async def test_zoom_and_recall_need_read_message_history_there(world: World) -> None:
    # alice sees the channel and may post, but not read what was said before she looks.
    secret = world.guild.create_text_channel(
        "secret", overwrites={world.alice: discord.PermissionOverwrite(read_message_history=False)}
    )
    chat = await world.engine.ensure_chat(
        ChatKey("text", "secret", discord_id=secret.id, guild_id=world.guild.id)
    )
    await world.engine.append_many(chat, [message(world.bob, 500, "the surprise party is on friday")])
    assert reply_text(await world.alice.slash(secret, "zoom", address="0+1")) == NO_HISTORY_HERE
    assert reply_text(await world.alice.slash(secret, "recall", query="surprise")) == NO_HISTORY_HERE
    assert [type(e) for e in causes(world.env.errors)] == [UserFacingError, UserFacingError]
    assert await world.alice.autocomplete(secret, "zoom", "address", "") == []
    # bob may read the history: the same commands answer him.
    assert "surprise party" in reply_text(await world.bob.slash(secret, "zoom", address="0+1"))
    assert "surprise party" in reply_text(await world.bob.slash(secret, "recall", query="surprise"))
    # Where alice may read the history, nothing changes for her.
    assert reply_text(await world.alice.slash(world.general, "zoom", address="0+1")) != NO_HISTORY_HERE


async def test_memory_commands_need_the_admins_own_history_in_the_channel_they_are_used_in(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    # ada has Manage Server, and may see and post in #staff, but not read what was said there.
    staff = world.guild.create_text_channel(
        "staff", overwrites={world.admin: discord.PermissionOverwrite(read_message_history=False)}
    )
    chat = await world.engine.ensure_chat(
        ChatKey("text", "staff", discord_id=staff.id, guild_id=world.guild.id)
    )
    texts = [f"staff note {k}: the raise for bob is {k} percent" for k in range(8)]
    await world.engine.append_many(chat, [message(world.bob, 600 + k, t) for k, t in enumerate(texts)])
    refused = f"You cannot read <#{staff.id}>, so I will not show or change its memory."
    before = await counts(sessions)
    for sub, options in [
        ("view", {}),
        ("people", {}),
        ("node", {"address": "0+1"}),
        ("status", {}),
        ("compact", {}),
        ("pause", {}),
        ("resume", {}),
        ("wipe", {}),
    ]:
        result = await world.admin.slash(staff, f"memory {sub}", **options)
        assert reply_text(result) == refused, sub
        assert result.response is not None and result.response.attachments == []
    assert await counts(sessions) == before  # nothing paused, compacted or wiped
    assert await world.admin.autocomplete(staff, "memory node", "address", "") == []
    # Named as the option from a channel she can read: refused the same way.
    assert reply_text(await world.admin.slash(world.general, "memory view", channel=staff)) == refused
    # Her own /zoom and /recall there are refused too; where she may read, /memory view answers.
    assert reply_text(await world.admin.slash(staff, "zoom", address="0+1")) == NO_HISTORY_HERE
    assert reply_text(await world.admin.slash(staff, "recall", query="raise")) == NO_HISTORY_HERE
    shown = await world.admin.slash(world.general, "memory view")
    assert shown.response is not None and len(shown.response.attachments) == 1
    assert [type(e) for e in causes(world.env.errors)] == [UserFacingError] * 11  # one line each
