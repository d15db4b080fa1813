"""Mentions become names when a message is logged (live, edited, backfilled), through the real
discord.py in a SimCord guild on the real database: the guild's cache and the message's
resolved mentions first, REST when the cache misses, the raw form when nothing names the id;
opted-out people are never named in a new line."""

from __future__ import annotations

from typing import Any

import discord
import simcord
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.forget import forget_person
from bot.services import Services
from memory.storage.models import Message
from tests.bot.conftest import Room, ingest_of
from tests.bot.gateway.test_backfill import DiscordHistory, history  # noqa: F401  (the fixture)


async def rows(
    sessions: async_sessionmaker[AsyncSession], services: Services, channel_id: int
) -> list[Message]:
    info = await services.engine.chat_by_discord_id(channel_id)
    assert info is not None, "the channel has no memory"
    async with sessions() as s:
        found = await s.scalars(select(Message).where(Message.chat_id == info.id).order_by(Message.idx))
        return list(found.all())


async def flushed(env: simcord.Env) -> None:
    await env.settle()
    assert await ingest_of(env.bot).flush(timeout=5)  # type: ignore[arg-type]


async def test_live_and_edited_messages_store_names(
    room: Room, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    env, guild, general = room
    plans = guild.create_text_channel("plans")
    mods = guild.create_role("Moderators", mentionable=True)
    # (SimCord sends mentioned users without their member object, so a nickname is not seen
    # here; tests/bot/test_whole_process.py covers nicknames with Discord's full payload.)
    alice = room.member("alice", global_name="Ali")
    bob = room.member("bob", global_name="Bobby")
    sent = await alice.send(
        general, f"<@{bob.id}> see <#{plans.id}>, ask <@&{mods.id}> <:partyblob:123456789012345678>"
    )
    await flushed(env)
    (row,) = await rows(sessions, services, general.id)
    assert row.text == "@Bobby see #plans, ask @Moderators :partyblob:"
    assert row.mention_ids == [bob.id] and row.mention_names == ["Bobby"]

    await alice.edit(sent, f"never mind <@!{bob.id}>, ask <@{alice.id}> in <#{general.id}>")
    await flushed(env)
    (row,) = await rows(sessions, services, general.id)
    assert row.text == "never mind @Bobby, ask @Ali in #general"
    assert row.mention_ids == [bob.id, alice.id] and row.mention_names == ["Bobby", "Ali"]


async def test_an_opted_out_person_is_never_named_in_a_new_line(
    room: Room, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    env, guild, general = room
    alice, zed = room.member("alice"), room.member("zed", global_name="Zed Zebra")
    before = await alice.send(general, f"did <@{zed.id}> pay you back?")
    await zed.send(general, "I did")
    await flushed(env)
    assert [r.text for r in await rows(sessions, services, general.id)] == [
        "did @Zed Zebra pay you back?",
        "I did",
    ]

    # Zed erases themselves and opts out, as /forget-me does after the button.
    await forget_person(services, ingest_of(env.bot), guild.id, zed.id, opt_out=True)
    await alice.send(general, f"where is <@{zed.id}> tonight?")
    await alice.edit(before, f"did <@{zed.id}> pay you back yet?")  # an edit is a new line too
    await flushed(env)

    logged = await rows(sessions, services, general.id)
    assert [r.text for r in logged] == [
        "did @unknown-user pay you back yet?",
        None,  # Zed's own message: erased, slot kept
        "where is @unknown-user tonight?",
    ]
    assert all(not r.mention_ids and not r.mention_names for r in logged)


async def test_a_person_only_mentioned_hears_that_their_name_was_taken_out(
    room: Room, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    env, guild, general = room
    alice, zed = room.member("alice"), room.member("zed", global_name="Zed Zebra")
    await alice.send(general, f"did <@{zed.id}> pay you back?")
    await alice.send(general, f"ask <@{zed.id}> and <@{alice.id}>")
    await flushed(env)

    said = await forget_person(services, ingest_of(env.bot), guild.id, zed.id, opt_out=False)

    assert said.startswith("I had no messages of yours to erase.")
    assert "Your name is gone from 2 messages of others that named you." in said
    texts = [r.text for r in await rows(sessions, services, general.id)]
    assert texts == ["did @unknown-user pay you back?", "ask @unknown-user and @alice"]


async def test_backfilled_messages_and_cache_misses(
    room: Room,
    services: Services,
    sessions: async_sessionmaker[AsyncSession],
    history: DiscordHistory,  # noqa: F811
) -> None:
    env, guild, general = room
    hidden = guild.create_text_channel(
        "mods-only", overwrites={guild.default_role: discord.PermissionOverwrite(view_channel=False)}
    )
    crew = guild.create_role("Crew", mentionable=True)
    alice, bob = room.people("alice", "bob")
    await alice.send(general, "before")
    await flushed(env)
    bot: Any = env.bot
    cog: Any = bot.get_cog("IngestCog")
    lookup = ingest_of(bot).mentions
    # The role is not in discord.py's cache (as for a role created while a shard was away):
    # the name comes from REST.
    bot.get_guild(guild.id)._remove_role(crew.id)
    gone_channel = 999_999_999_999_999_999

    await cog.on_disconnect()
    text = f"<@{bob.id}> and <@&{crew.id}>: not in <#{hidden.id}> nor <#{gone_channel}>"
    env.backend.create_message(general.id, alice.id, text, broadcast=False)
    env.backend.create_message(general.id, bob.id, f"<#{gone_channel}> again", broadcast=False)
    await cog.on_resumed()
    await flushed(env)

    logged = await rows(sessions, services, general.id)
    assert [r.text for r in logged] == [
        "before",
        # A channel @everyone cannot see keeps its raw form, and so does an unknown one.
        f"@bob and @Crew: not in <#{hidden.id}> nor <#{gone_channel}>",
        f"<#{gone_channel}> again",
    ]
    assert logged[1].mention_ids == [bob.id]
    # One REST call for the role, one for the unknown channel; the channel is not asked twice.
    assert lookup.rest_calls == 2
