"""Join-in channels: in a channel listed with /settings join-in, Eva answers a
message nobody addressed to her when the check (one call to COMPACT_MODEL over the newest
lines) says yes; quiet otherwise; one unprompted reply per channel per JOIN_IN_COOLDOWN, kept
in the database; never to an opted-out person, never in a channel not listed; the check is paid
for in the ledger. Real discord.py in SimCord, the Anthropic fake through the real SDK."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.core.join_in import CHECK_SYSTEM_HEAD
from bot.core.turn import UNPROMPTED_NOTE
from bot.reply.join_in import JoinIn
from memory.storage.models import UsageEntry
from tests.worlds.reply_fixtures import fake, settings, simcord_bot, world
from tests.worlds.reply_world import World, user_text

__all__ = ["fake", "settings", "simcord_bot", "world"]  # fixtures

PADEL = "anyone know when the padel is?"
COOLDOWN = 600  # JOIN_IN_COOLDOWN's default, in seconds


async def join_in_here(world: World) -> None:
    await world.engine.guild_settings.change_list(world.guild.id, "join_in_channels", world.general.id, True)


def checks(world: World) -> list[dict]:
    return [entry.body for entry in world.fake.requests("join_in")]


async def test_a_question_to_the_room_is_answered_when_the_check_says_yes(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    await join_in_here(world)
    world.fake.script.push_text("yes", match="join_in")
    await world.bob.send(world.general, PADEL)
    (check,) = checks(world)
    assert check["model"] == world.services.settings.compact_model
    assert check["system"].startswith(CHECK_SYSTEM_HEAD) and check["max_tokens"] <= 5
    chat = check["messages"][0]["content"]
    assert chat.split("\n</chat>")[0].splitlines()[-1].endswith(f"bob: {PADEL}")
    assert len(chat.split("<chat>\n")[1].split("\n</chat>")[0].splitlines()) == 6  # the last few
    (reply,) = world.replies()
    assert UNPROMPTED_NOTE in user_text(reply.body)
    answers = world.bot_messages()
    assert len(answers) == 1 and answers[0].reference is not None
    async with sessions() as s:
        # The world's compactor writes its own rows (compact, and the people cards at a swap).
        compactor_kinds = ("compact", "cards")
        kinds = (
            await s.scalars(select(UsageEntry.kind).where(UsageEntry.kind.not_in(compactor_kinds)))
        ).all()
    assert sorted(kinds) == ["join_in", "reply"]  # the check is in the ledger, with the reply


async def test_quiet_when_the_check_says_no_or_the_channel_is_not_listed(world: World) -> None:
    other = world.guild.create_text_channel("other")
    await world.env.settle()
    await world.bob.send(other, PADEL)  # not listed: no check at all
    assert checks(world) == [] and world.replies() == []
    await join_in_here(world)
    world.fake.script.push_text("no", match="join_in")
    await world.bob.send(world.general, PADEL)
    assert len(checks(world)) == 1 and world.replies() == [] and world.bot_messages() == []
    await world.alice.send(world.general, "nice weather today")  # not a question: no check
    assert len(checks(world)) == 1


async def test_one_unprompted_reply_per_channel_per_cooldown_across_a_restart(world: World) -> None:
    await join_in_here(world)
    await world.bob.send(world.general, PADEL)  # the fake's judge: a "?" is a yes
    assert len(world.bot_messages()) == 1 and len(checks(world)) == 1
    world.clock.advance(COOLDOWN - 60)
    await world.alice.send(world.general, "and who brings the rackets?")
    assert len(world.bot_messages()) == 1 and len(checks(world)) == 1  # no reply, not even a check
    # A new process (a fresh JoinIn over the same database) still sees the cooldown.
    fresh = JoinIn(world.env.bot, world.services, world.env.bot.get_cog("ReplyCog").gate)  # type: ignore[union-attr]
    asked = [m for m in world.general.history() if m.content == "and who brings the rackets?"][-1]
    assert not await fresh.consider(asked)
    world.clock.advance(61)
    await world.alice.send(world.general, "so who brings the rackets?")
    assert len(world.bot_messages()) == 2 and len(checks(world)) == 2


async def test_an_opted_out_person_is_never_answered_unasked(world: World) -> None:
    await join_in_here(world)
    await world.engine.opt_out(world.guild.id, world.bob.id)
    world.fake.script.push_text("yes", match="join_in")  # a check, if one ran, would say yes
    await world.bob.send(world.general, PADEL)
    assert checks(world) == [] and world.bot_messages() == []
    await world.alice.send(world.general, PADEL)  # the same words from someone remembered
    assert len(checks(world)) == 1 and len(world.bot_messages()) == 1


async def test_join_in_is_off_by_default(world: World) -> None:
    await world.bob.send(world.general, PADEL)
    assert checks(world) == [] and world.bot_messages() == []
