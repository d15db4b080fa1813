"""Streamed replies, max_tokens and the delaying cooldown through SimCord (real discord.py), the
real reply cog and the Anthropic fake through the real SDK's streaming API."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from bot.core.turn_loop import CONTINUE_NOTE
from bot.reply.limits import CLAUDE_DOWN_NOTE, replies_this_month
from bot.reply.live import EDIT_SECONDS, LiveReply
from bot.reply.splitting import split_message
from memory.fakes.prompt_cache import BYTES_PER_TOKEN
from tests.fakes.anthropic_behaviours import Fault
from tests.worlds.reply_fixtures import fake, settings, simcord_bot, world
from tests.worlds.reply_world import World, user_text

USERS_ONLY = {"parse": ["users"], "replied_user": False}


__all__ = ["fake", "settings", "simcord_bot", "world"]  # fixtures


class Ticks:
    """A clock that moves 0.25 s each time it is read, and by the full amount when slept on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.25
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def driven(world: World) -> tuple[Ticks, list[float]]:
    """Drive the cog's streamed replies by a Ticks clock; the returned list gets the clock time
    of every render (each render is one round of sends/edits)."""
    cog: Any = world.env.bot.get_cog("ReplyCog")
    assert cog is not None
    ticks = Ticks()
    cog.live_clock, cog.live_sleep = ticks, ticks.sleep
    renders: list[float] = []
    original = LiveReply._render

    async def render(self: LiveReply) -> None:
        await original(self)
        if self.last_render is not None and (not renders or renders[-1] != self.last_render):
            renders.append(self.last_render)

    LiveReply._render = render  # type: ignore[method-assign]
    return ticks, renders


@pytest.fixture(autouse=True)
def _restore_render() -> Any:
    original = LiveReply._render
    yield
    LiveReply._render = original  # type: ignore[method-assign]


def message_requests(world: World, method: str) -> list[Any]:
    return [r for r in world.env.http_requests if r.method == method and "/messages" in r.path]


SENTENCES = " ".join(f"Sentence number {k} says a little more about the lake, @everyone." for k in range(20))


async def test_a_streamed_reply_grows_by_edits_at_most_every_1_5_s(world: World) -> None:
    _, renders = driven(world)
    world.fake.stream_chunk_chars = 40  # ~35 deltas
    world.fake.script.push_text(SENTENCES)
    await world.alice.send(world.general, f"{world.me.mention} tell me everything")
    assert world.replies()[-1].body["stream"] is True
    posts, patches = message_requests(world, "POST"), message_requests(world, "PATCH")
    first = posts[0].json["content"]
    assert len(posts) == 1 and first != SENTENCES.replace("@everyone", "@\u200beveryone")
    assert first.startswith("Sentence number 0 says a little more about the lake, @\u200beveryone. ")
    assert len(patches) >= 3  # it grew on screen
    # Users only on every edit too (discord.py leaves replied_user out of an edit: it has no effect there).
    assert posts[0].json["allowed_mentions"] == USERS_ONLY
    assert [p.json["allowed_mentions"] for p in patches] == [{"parse": ["users"]}] * len(patches)
    assert all("@everyone" not in p.json["content"] for p in posts + patches)
    gaps = [b - a for a, b in itertools.pairwise(renders)]
    assert len(renders) == 1 + len(patches) and min(gaps) >= EDIT_SECONDS
    (answer,) = world.bot_messages()
    assert answer.content == SENTENCES.replace("@everyone", "@\u200beveryone")


async def test_a_long_streamed_reply_continues_in_new_messages_like_a_finished_one(world: World) -> None:
    driven(world)
    world.fake.stream_chunk_chars = 150
    text = "\n\n".join(f"Part {k}. " + "many words here " * 70 for k in range(3))  # ~3,400 characters
    world.fake.script.push_text(text)
    asked = await world.alice.send(world.general, f"{world.me.mention} the long story please")
    sent = world.bot_messages()
    # Cut at the paragraphs as a finished reply is: 1,128 + 1,128 + 1,128 characters.
    assert [m.content for m in sent] == split_message(text) and len(sent) == 3
    assert sent[0].reference is not None and sent[0].reference.message_id == asked.id
    assert all(m.reference is not None and m.reference.message_id == asked.id for m in sent[1:])


async def test_tool_steps_show_a_status_while_they_run(world: World) -> None:
    driven(world)
    world.fake.script.push_tool_use("recall", {"query": "flamingo"})
    world.fake.script.push_text("The flamingo was pink, bob said so.")
    await world.alice.send(world.general, f"{world.me.mention} what about the flamingo?")
    shown = [r.json["content"] for r in message_requests(world, "POST") + message_requests(world, "PATCH")]
    assert shown[0] == "-# looking through the memory…"
    (answer,) = world.bot_messages()
    assert answer.content == "The flamingo was pink, bob said so."


@pytest.mark.parametrize("settings", [{"stream_replies": False}], indirect=True)
async def test_without_streaming_the_reply_is_sent_once(world: World) -> None:
    world.fake.script.push_text(SENTENCES)
    await world.alice.send(world.general, f"{world.me.mention} tell me everything")
    assert "stream" not in world.replies()[-1].body
    assert message_requests(world, "PATCH") == []
    (post,) = message_requests(world, "POST")
    assert post.json["content"] == SENTENCES.replace("@everyone", "@\u200beveryone")


@pytest.mark.parametrize("settings", [{"stream_replies": False}], indirect=True)
async def test_without_streaming_every_part_of_a_long_reply_replies_to_the_question(world: World) -> None:
    """Each part is a Discord reply to the trigger, as streamed ones are: an erasure of the
    person who asked finds the whole answer (docs/security.md)."""
    text = "\n\n".join(f"Part {k}. " + "many words here " * 70 for k in range(3))  # ~3,400 characters
    world.fake.script.push_text(text)
    asked = await world.alice.send(world.general, f"{world.me.mention} the long story please")
    sent = world.bot_messages()
    assert [m.content for m in sent] == split_message(text) and len(sent) == 3
    assert all(m.reference is not None and m.reference.message_id == asked.id for m in sent)


# --- max_tokens -----------------------------------------------------------------------------

SMALL = {"reply_max_tokens": 20}  # the fake cuts text at 20 tokens x 4 bytes = 80 bytes
CUT_AT = 20 * BYTES_PER_TOKEN


@pytest.mark.parametrize("settings", [SMALL], indirect=True)
async def test_a_reply_that_runs_out_continues_once_in_the_same_turn(world: World) -> None:
    first = "The trip was great. We took the paddle boat out to the island and then the weather turned"
    world.fake.script.push_text(first)
    world.fake.script.push_text(" and we rowed back fast.")
    await world.alice.send(world.general, f"{world.me.mention} how was the trip?")
    _start, again = world.replies()
    shown = first.encode()[:CUT_AT].decode()
    assert shown.endswith(" the weath")  # the fake stopped mid-word ...
    tail = again.body["messages"][-2:]
    assert tail == [
        {"role": "assistant", "content": [{"type": "text", "text": shown}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": CONTINUE_NOTE, "cache_control": {"type": "ephemeral"}}],
        },
    ]
    (answer,) = world.bot_messages()
    assert answer.content == shown + " and we rowed back fast."  # ... and the reply went on


@pytest.mark.parametrize("settings", [SMALL], indirect=True)
async def test_a_reply_that_runs_out_twice_ends_at_its_last_sentence(world: World) -> None:
    world.fake.script.push_text(
        "Yes. It rained a lot on the lake that day and everyone got very wet, sadly, all of us"
    )
    world.fake.script.push_text(
        " and then some more words without any full stop, words that go on past the cut point"
    )
    await world.alice.send(world.general, f"{world.me.mention} did it rain?")
    assert len(world.replies()) == 2
    (answer,) = world.bot_messages()
    assert answer.content == "Yes. …"  # the only whole sentence, never a cut word


# --- the cooldown ---------------------------------------------------------------------------


async def test_the_cooldown_is_per_person_and_per_channel(world: World) -> None:
    await world.alice.send(world.general, f"{world.me.mention} first")
    await world.bob.send(world.general, f"{world.me.mention} bob is not in alice's cooldown")
    await world.alice.user.send_dm("and a DM is another channel")
    assert len(world.replies()) == 3 and len(world.bot_messages()) == 2
    await world.alice.send(world.general, f"{world.me.mention} second, too soon")
    assert len(world.replies()) == 3  # waits, silently
    assert not any("Slow down" in m.content for m in world.bot_messages())
    await world.env.advance_time(30)
    assert len(world.replies()) == 4
    assert 'Answer message #304 by "alice".' in user_text(world.replies()[-1].body)
    assert world.bot_messages()[-1].content.startswith("Fake reply")


# --- a failure after the 200 ----------------------------------------------------------------


async def test_an_overload_mid_stream_replaces_the_partial_reply_with_a_note(world: World) -> None:
    driven(world)
    world.fake.stream_chunk_chars = 40
    world.fake.faults.fail_next(1, Fault("stream_error", after_deltas=5), match="reply")
    world.fake.script.push_text(SENTENCES)
    await world.alice.send(world.general, f"{world.me.mention} tell me everything")
    (request,) = world.replies()  # an error inside a stream is not retried by the SDK
    assert request.status == 200 and request.fault == "stream_error"
    shown = [r.json["content"] for r in message_requests(world, "POST")]
    assert shown[0].startswith("Sentence number 0")  # the partial answer was on screen ...
    (answer,) = world.bot_messages()
    assert answer.content == CLAUDE_DOWN_NOTE  # ... and became the note, in the same message
    assert await replies_this_month(world.services.engine, world.guild.id, world.clock.now()) == 0
    world.later()
    await world.alice.send(world.general, f"{world.me.mention} and now?")
    assert world.bot_messages()[-1].content.startswith("Fake reply")
