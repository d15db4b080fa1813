"""When the bot answers, and the limits on how often: triggers, debounce, one turn per chat at a
time, the monthly cap, and askers whose messages are not in the log."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from bot.reply.cog import ReplyCog
from bot.reply.limits import CAP_NOTE
from bot.reply.sending import defuse_mass_mentions
from bot.reply.triggers import mentions_name
from memory.clock import SimulatedClock
from tests.worlds.reply_fixtures import fake, settings, simcord_bot, world
from tests.worlds.reply_world import START, World, make_settings, user_text

__all__ = ["fake", "settings", "simcord_bot", "world"]  # fixtures


def test_the_name_counts_only_as_a_whole_word() -> None:
    assert mentions_name("hey eva, you there?", "Eva")
    assert mentions_name("EVA!", "Eva") and mentions_name("is that Eva's?", "Eva")
    assert not mentions_name("Evangeline said", "Eva") and not mentions_name("medieval", "Eva")
    assert not mentions_name("anything", "  ")
    assert defuse_mass_mentions("@everyone and @here") == "@\u200beveryone and @\u200bhere"


async def test_mentions_replies_the_name_and_dms_trigger_a_turn(world: World) -> None:
    helper = world.guild.add_member(world.env.create_user("helper", bot=True))
    await helper.send(world.general, f"{world.me.mention} I am a bot, answer me")
    await world.alice.send(world.general, "@everyone party tonight")
    await world.bob.send(world.general, "Evangeline is coming too")
    assert world.replies() == []

    await world.alice.send(world.general, f"{world.me.mention} hi")
    typing = [r.path for r in world.env.http_requests if r.path.endswith("/typing")]
    assert typing == [f"/channels/{world.general.id}/typing"]  # while it thought
    await world.bob.send(world.general, "haha true", reply_to=world.bot_messages()[-1])
    world.later()
    await world.alice.send(world.general, "what do you think, EVA?")
    assert len(world.replies()) == 3 and len(world.bot_messages()) == 3

    world.later()
    await world.alice.user.send_dm("psst, a secret just for you")
    dm = world.alice.user.dm_channel.history()
    assert [m.author.id for m in dm] == [world.alice.id, world.me.id]
    assert len(world.replies()) == 4 and dm[1].content.startswith("Fake reply")
    dm_request = user_text(world.replies()[-1].body)
    assert "psst, a secret" in dm_request and "paddle boat" not in dm_request  # its own memory
    helper_logged = await world.engine.index_of_snowflake(world.chat_id, world.general.history()[0].id)
    assert helper_logged is None  # other bots are neither answered nor remembered


@pytest.mark.parametrize("settings", [{"reply_to_name": False, "reply_in_dms": False}], indirect=True)
async def test_the_name_and_dms_can_be_switched_off(world: World) -> None:
    await world.alice.send(world.general, "eva, are you there?")
    await world.alice.user.send_dm("hello?")
    assert world.replies() == []
    await world.alice.send(world.general, f"{world.me.mention} are you there?")
    assert len(world.replies()) == 1


@pytest.mark.parametrize("settings", [{"debounce_seconds": 30.0}], indirect=True)
async def test_a_burst_gets_one_answer_after_the_debounce(world: World) -> None:
    # 30 s, not the default 1.5 s: SimCord parks only sleeps that end past its 5 s settle
    # deadline, so a shorter one would be drained by the first send.
    await world.alice.send(world.general, f"{world.me.mention} quick question")
    await world.bob.send(world.general, "eva, me too")
    assert world.replies() == []  # still waiting for the burst to end
    await world.env.advance_time(30)
    (request,) = world.replies()
    text = user_text(request.body)
    assert 'Also addressed to you since your last reply: message #300 by "alice".' in text
    assert 'Answer message #301 by "bob".' in text
    (answer,) = world.bot_messages()
    assert answer.reference is not None and answer.reference.message_id == world.general.history()[-2].id


class QueueOnly(ReplyCog):
    """The reply cog's queueing with every message a trigger and turns that only record."""

    def __init__(self) -> None:
        bot: Any = SimpleNamespace(user=SimpleNamespace(id=1))
        super().__init__(bot, SimpleNamespace(settings=make_settings(), clock=SimulatedClock(START)))  # type: ignore[arg-type]
        self.batches: list[list[int]] = []
        self.running = 0

    def is_trigger(self, message: Any) -> bool:
        return True

    async def _admit(self, message: Any) -> bool:
        return True

    async def answer(self, batch: list[Any]) -> None:
        self.running += 1
        assert self.running == 1, "two turns at once in one chat"
        self.batches.append([m.id for m in batch])
        if len(self.batches) == 1:  # messages that arrive while this turn thinks
            for k, author in ((2, 20), (3, 30), (4, 20)):
                await self.on_message(chat_message(k, author))
            await asyncio.sleep(0)
        self.running -= 1


def chat_message(k: int, author: int) -> Any:
    return SimpleNamespace(id=k, author=SimpleNamespace(id=author), channel=SimpleNamespace(id=77))


async def test_one_turn_per_chat_and_the_next_reads_what_came_meanwhile() -> None:
    cog = QueueOnly()
    await cog.on_message(chat_message(1, 10))
    worker = cog.queues[77].worker
    assert worker is not None
    await worker
    assert cog.batches == [[1], [2, 3, 4]] and cog.queues[77].worker is None


@pytest.mark.parametrize("settings", [{"guild_monthly_reply_cap": 1}], indirect=True)
async def test_the_monthly_cap_answers_with_a_note(world: World) -> None:
    await world.alice.send(world.general, f"{world.me.mention} one")
    world.later()
    await world.alice.send(world.general, f"{world.me.mention} two")
    assert len(world.replies()) == 1
    assert world.bot_messages()[-1].content == CAP_NOTE
    world.later()
    await world.alice.user.send_dm("DMs are not a server's replies")
    assert len(world.replies()) == 2


async def test_an_asker_who_is_not_remembered_is_still_answered(world: World) -> None:
    await world.engine.opt_out(world.guild.id, world.alice.id)
    await world.ingest.refresh_opt_outs(world.guild.id)
    asked = await world.alice.send(world.general, f"{world.me.mention} do you remember me?")
    assert await world.engine.index_of_snowflake(world.chat_id, asked.id) is None
    text = user_text(world.replies()[-1].body)
    assert 'Answer the message by "alice" shown below (it is not in the log).' in text
    shown = (
        'The message by "alice" is not remembered here (not in the log), so it is only shown now, quoted: "'
    )
    # Shown as people see it, the mention as the bot's name (as ingest would have logged it).
    assert f'{shown}@{world.me.display_name} do you remember me?"\n</turn>' in text
    assert f"<@{world.me.id}>" not in text
    assert len(world.bot_messages()) == 1
