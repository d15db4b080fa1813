"""Names instead of ids through the whole process: the real `eva run` against the local
Discord fake (MESSAGE_CREATE carries the mentioned users with their member objects, the guild
its channels, roles and members, as Discord sends them) and the Anthropic fake. A question
with mentions reaches the reply model, and the database, with names and no ids."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.storage.models import Message
from tests.worlds.eva_process import ProcessWorld, eventually, logged_message


async def test_a_question_with_mentions_reaches_the_model_and_the_log_as_names(
    processes: ProcessWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    discord_fake, anthropic_fake, ids = processes.discord, processes.anthropic, processes.discord.ids
    guild = discord_fake.world.guilds[ids.guild]
    guild.members[ids.bob].nick = "Bobby"  # a nickname: what the guild shows for bob
    eva = await processes.run()
    question = f"<@{ids.bot}> what did <@{ids.alice}> say in <#{ids.general}>?"
    asked = discord_fake.chat.post_user_message(ids.general, ids.bob, question)
    edited_by_hand = discord_fake.chat.post_user_message(
        ids.general, ids.alice, f"<@!{ids.bob}> ask <@&{ids.admin_role}> in <#{ids.random}>"
    )

    async def answered() -> list[Any]:
        return [
            m for m in discord_fake.world.channel_messages(ids.general) if int(m["author"]["id"]) == ids.bot
        ]

    await eventually(answered, within=20)
    request = json.dumps(anthropic_fake.requests("reply")[0].body, ensure_ascii=False)
    assert "@Eva what did @alice say in #general?" in request
    assert "<@" not in request and "<#" not in request
    assert str(ids.alice) not in request and str(ids.general) not in request

    row = await eventually(lambda: logged_message(sessions, int(asked["id"])))
    assert row.text == "@Eva what did @alice say in #general?" and row.author_name == "Bobby"
    assert row.mention_ids == [ids.bot, ids.alice] and row.mention_names == ["Eva", "alice"]
    other = await eventually(lambda: logged_message(sessions, int(edited_by_hand["id"])))
    assert other.text == "@Bobby ask @Admin in #random" and other.mention_ids == [ids.bob]

    async with sessions() as s:
        texts = (await s.scalars(select(Message.text))).all()
    assert not any(t and ("<@" in t or "<#" in t) for t in texts)
    assert await eva.terminate() == 0
    assert not any("Traceback" in line for line in eva.raw)
