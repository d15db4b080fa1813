"""A join-in channel through the real `eva run` process against the whole-process Discord fake
and the Anthropic fake (whose judge says yes to a question): a question to the room gets one
reply; a second question within JOIN_IN_COOLDOWN gets none, and no check is paid for."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.bot.test_whole_process_settings import bot_messages, slash
from tests.worlds.eva_process import EvaProcess, ProcessWorld, eventually, logged_message


async def test_a_question_to_the_room_gets_one_reply_and_a_second_within_the_cooldown_none(
    processes: ProcessWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    discord_fake, anthropic_fake, ids = processes.discord, processes.anthropic, processes.discord.ids
    sync = await processes.start("sync-commands")
    assert await asyncio.wait_for(sync.proc.wait(), 60) == 0
    eva: EvaProcess = await processes.run(USER_COOLDOWN_SECONDS="0")
    try:
        joined = await slash(discord_fake, ids.admin, ids.general, "settings join-in", channel=ids.general)
        assert joined.startswith(f"In <#{ids.general}> I now answer unasked")
        asked = discord_fake.chat.post_user_message(ids.general, ids.alice, "anyone know when the padel is?")

        async def answers() -> list[dict[str, Any]]:
            return bot_messages(discord_fake, ids.general)

        (answer,) = await eventually(answers, within=20)
        assert answer["message_reference"]["message_id"] == asked["id"]
        assert len(anthropic_fake.requests("join_in")) == 1 and len(anthropic_fake.requests("reply")) == 1

        again = discord_fake.chat.post_user_message(ids.general, ids.bob, "and who brings the rackets?")
        await eventually(lambda: logged_message(sessions, int(again["id"])))

        async def cooling() -> list[dict[str, Any]]:
            return [e for e in eva.events if e.get("event") == "join_in.cooling_down"]

        (held,) = await eventually(cooling, within=15)
        assert held["message_id"] == int(again["id"])
        assert len(await answers()) == 1 and len(anthropic_fake.requests("join_in")) == 1
        assert await eva.terminate() == 0
        assert not any("Traceback" in line for line in eva.raw)
    finally:
        eva.kill()
