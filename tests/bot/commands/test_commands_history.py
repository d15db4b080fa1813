"""/zoom and /recall show what was said in a channel only to members who may read its history
(like /memory): a member without Read Message History cannot read what came before them."""

from __future__ import annotations

import discord

from bot.cogs.people import NO_HISTORY_HERE
from memory.errors import UserFacingError
from memory.log import ChatKey
from tests.bot.commands_world import World, causes, message, reply_text


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
