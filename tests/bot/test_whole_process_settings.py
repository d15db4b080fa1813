"""/settings through the real `eva run` process against the whole-process Discord fake (gateway
and REST over TCP): the answer comes within Discord's 3 seconds, and the reply limits hold while
every message is still logged."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.fakes.discord_api import FakeDiscord
from tests.worlds.eva_process import EvaProcess, ProcessWorld, eventually, logged_message

DISCORD_ANSWER_WINDOW = 3.0  # seconds Discord gives an interaction before it is "Unknown interaction"


async def slash(discord_fake: FakeDiscord, user_id: int, channel_id: int, path: str, **options: Any) -> str:
    """Invoke a command as a member; the ephemeral answer's text, which must come within 3 s."""
    invoked = discord_fake.interactions.create_command(user_id, channel_id, path, options or None)

    async def answered() -> list[dict[str, Any]]:
        return discord_fake.interactions.responses(int(invoked["id"]))

    (response,) = await eventually(answered, within=DISCORD_ANSWER_WINDOW)
    assert response["kind"] == "callback" and response["ephemeral"], response
    content = response["body"]["data"]["content"]
    assert isinstance(content, str)
    return content


def bot_messages(discord_fake: FakeDiscord, channel_id: int) -> list[dict[str, Any]]:
    bot_id = discord_fake.ids.bot
    return [m for m in discord_fake.world.channel_messages(channel_id) if int(m["author"]["id"]) == bot_id]


async def test_settings_limit_replies_in_the_real_process(
    processes: ProcessWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    discord_fake, anthropic_fake, ids = processes.discord, processes.anthropic, processes.discord.ids
    sync = await processes.start("sync-commands", USER_COOLDOWN_SECONDS="0")
    assert await asyncio.wait_for(sync.proc.wait(), 60) == 0
    eva: EvaProcess = await processes.run(USER_COOLDOWN_SECONDS="0")
    try:
        shown = await slash(discord_fake, ids.admin, ids.general, "settings show")
        assert "Replies: everywhere I can read." in shown and "Who may talk to me: everyone." in shown

        await slash(discord_fake, ids.admin, ids.general, "settings replies", where="channels")
        listed = await slash(
            discord_fake, ids.admin, ids.general, "settings reply-channel", channel=ids.general
        )
        assert listed == f"<#{ids.general}> is now on the list of reply channels."
        elsewhere = discord_fake.chat.post_user_message(ids.random, ids.alice, f"<@{ids.bot}> anyone here?")
        await eventually(lambda: logged_message(sessions, int(elsewhere["id"])))
        here = discord_fake.chat.post_user_message(ids.general, ids.alice, f"<@{ids.bot}> and here?")
        await eventually(lambda: logged_message(sessions, int(here["id"])))

        async def answered(message: dict[str, Any]) -> bool:
            return any(
                (m.get("message_reference") or {}).get("message_id") == message["id"]
                for m in bot_messages(discord_fake, int(message["channel_id"]))
            )

        await eventually(lambda: answered(here), within=15)
        # The reply in general came after random's mention was logged and had its turn: none came.
        assert bot_messages(discord_fake, ids.random) == []
        assert len(anthropic_fake.requests("reply")) == 1

        muted = discord_fake.world.add_role(ids.guild, "muted", 0)
        discord_fake.world.give_role(ids.guild, ids.bob, muted.id)
        blocked = await slash(
            discord_fake, ids.admin, ids.general, "settings access", rule="block", role=muted.id
        )
        assert blocked == f"Added <@&{muted.id}> to the block list."
        from_bob = discord_fake.chat.post_user_message(ids.general, ids.bob, f"<@{ids.bot}> it's bob")
        await eventually(lambda: logged_message(sessions, int(from_bob["id"])))
        again = discord_fake.chat.post_user_message(ids.general, ids.alice, f"<@{ids.bot}> alice again")
        await eventually(lambda: answered(again), within=15)
        assert not await answered(from_bob)
        assert len(anthropic_fake.requests("reply")) == 2
        refused = [e for e in eva.events if e.get("event") == "reply.refused"]
        assert [(e["user_id"], e["reason"]) for e in refused] == [
            (ids.alice, "channel_not_listed"),
            (ids.bob, "blocked"),
        ]
        assert await eva.terminate() == 0
        assert not any("Traceback" in line for line in eva.raw)
    finally:
        eva.kill()
