"""A reply reads what its asker may read: through SimCord (real discord.py), the real ingest and
reply extensions, real PostgreSQL and the fake Anthropic API. carol may post in #general but
Discord denies her Read Message History there; what reaches the model for her is asserted on
the requests the fake receives, against the chat's own log and memory row read from the
database (not against the code's idea of what a turn without the memory is)."""

from __future__ import annotations

import json
import re
from typing import Any

import discord
import pytest
import simcord
from simcord.backend.models.channel import Overwrite
from simcord.builders import ChannelHandle
from simcord.enums import ChannelType, OverwriteType
from sqlalchemy import select

from bot.core.tools import FORGET_ASKED, TOOLS
from bot.reply.access import WITHOUT_MEMORY_LINE
from memory.storage.models import Message
from tests.fakes.anthropic_api import LogEntry
from tests.worlds.reply_fixtures import fake, settings, simcord_bot, world
from tests.worlds.reply_world import World, user_text

__all__ = ["fake", "settings", "simcord_bot", "world"]  # fixtures

QUESTION = "what did bob say before I joined?"
EMPTY_MEMORY = "<memory>\n</memory>\n<tail>\n</tail>\n<turn>\n"  # the frames, nothing inside
TOOL_NAMES = [tool["name"] for tool in TOOLS]


async def deny_history(world: World, channel: ChannelHandle, member: simcord.MemberActor) -> None:
    """A channel overwrite, as a server admin sets it: ``member`` sees and may post, not read back."""
    deny = discord.PermissionOverwrite(read_message_history=False).pair()[1].value
    world.env.backend.set_overwrite(channel.id, Overwrite(member.id, OverwriteType.MEMBER, deny=deny))
    await world.env.settle()


async def carol_without_history(world: World) -> simcord.MemberActor:
    carol = world.guild.add_member(world.env.create_user("carol"))
    await deny_history(world, world.general, carol)
    return carol


async def others_texts(world: World, chat_id: int, *not_by: int) -> list[str]:
    """Every logged text of the chat not written by ``not_by``, and its memory row's lines."""
    async with world.services.engine.sessions() as s:
        rows = await s.execute(select(Message.text, Message.author_id).where(Message.chat_id == chat_id))
        texts = [text for text, author in rows.all() if text and author not in not_by]
    view = await world.engine.prompt_view(chat_id)
    return texts + [line.split("|", 1)[-1] for line in view.row_lines]


def request_text(entry: LogEntry) -> str:
    """Everything the request carries (JSON, so tool inputs and results are in it too)."""
    return json.dumps(entry.body, ensure_ascii=False)


def assert_no_memory(entry: LogEntry, forbidden: list[str]) -> None:
    body = entry.body
    assert [tool["name"] for tool in body["tools"]] == ["forget_me"]  # no zoom, no recall
    assert user_text(body).startswith(EMPTY_MEMORY)
    assert re.search(r"#\d", user_text(body)) is None  # no log index: not even the chat's length
    sent = request_text(entry)
    leaked = [text for text in forbidden if text in sent]
    assert leaked == [], f"{len(leaked)} texts of the memory reached a reply to someone who may not read it"


def tool_results(entry: LogEntry) -> list[dict[str, Any]]:
    return [b for b in entry.body["messages"][-1]["content"] if b["type"] == "tool_result"]


async def test_a_member_without_read_message_history_gets_no_memory(world: World) -> None:
    carol = await carol_without_history(world)
    forbidden = await others_texts(world, world.chat_id, carol.id)
    assert any("flamingo" in text for text in forbidden) and len(forbidden) > 300  # the oracle holds
    # The model tries the memory tools anyway (they are not even offered): both are refused.
    world.fake.script.push_tool_use("recall", {"query": "flamingo"})
    world.fake.script.push_tool_use("zoom", {"id": 37, "n": 1})
    world.fake.script.push_text("I can't see what was said before you joined, sorry!")
    asked = await carol.send(world.general, f"{world.me.mention} {QUESTION}")

    first, second, third = world.replies()
    for entry in (first, second, third):
        assert_no_memory(entry, forbidden)
    text = user_text(first.body)
    assert 'Answer the message by "carol" shown below.' in text
    assert f'The message by "carol", quoted: "@{world.me.display_name} {QUESTION}"\n</turn>' in text
    assert "cannot read this channel's message history" in text
    for entry in (second, third):
        (result,) = tool_results(entry)
        assert result["is_error"] is True and "memory is closed" in result["content"]
    (reply,) = world.bot_messages()
    assert reply.reference is not None and reply.reference.message_id == asked.id
    assert reply.content == f"I can't see what was said before you joined, sorry!\n\n{WITHOUT_MEMORY_LINE}"

    # bob may read the history: the same question gets the normal turn, row, tail and tools.
    world.fake.script.push_text("bob talked about the paddle boat.")
    await world.bob.send(world.general, f"{world.me.mention} {QUESTION}")
    normal = world.replies()[-1]
    view = await world.engine.prompt_view(world.chat_id)
    assert [tool["name"] for tool in normal.body["tools"]] == TOOL_NAMES
    memory = view.people_text() + view.memory_text()  # the people cards first, then the row
    assert user_text(normal.body).startswith(memory + "\n<tail>\n" + view.tail_lines[0])
    assert not world.bot_messages()[-1].content.endswith(WITHOUT_MEMORY_LINE)


async def test_her_held_triggers_and_her_own_files_but_not_the_message_she_replies_to(world: World) -> None:
    carol = await carol_without_history(world)
    posted = await world.bob.send(
        world.general, "the plan is in here", attachments=[("plan.txt", b"the door code is 4711\n")]
    )
    await carol.send(world.general, f"{world.me.mention} what is in bob's file?", reply_to=posted)
    # Inside her cooldown: held, then answered together with what she adds meanwhile.
    await carol.send(
        world.general, f"{world.me.mention} and this one?", attachments=[("mine.txt", b"my own notes\n")]
    )
    await carol.send(world.general, f"{world.me.mention} hello??")
    assert len(world.replies()) == 1
    await world.env.advance_time(30)
    await world.env.advance_time(2)  # the streamed reply's last edit, 1.5 s after its first send
    first, held = world.replies()
    forbidden = await others_texts(world, world.chat_id, carol.id)
    for entry in (first, held):
        assert_no_memory(entry, [*forbidden, "4711", "plan.txt"])
    assert "what is in bob's file?" in user_text(first.body)
    text = user_text(held.body)
    assert "and this one?" in text and "hello??" in text and "my own notes" in text
    assert 'name="mine.txt" from="carol\'s message"' in text
    assert "what is in bob's file?" not in text  # answered already; the next turn has no tail
    assert all(m.content.endswith(WITHOUT_MEMORY_LINE) for m in world.bot_messages())


@pytest.mark.parametrize("settings", [{"debounce_seconds": 30.0}], indirect=True)
async def test_a_turn_for_several_people_is_split_by_who_may_read(world: World) -> None:
    carol = await carol_without_history(world)
    asked_alice = await world.alice.send(world.general, f"{world.me.mention} what did we plan?")
    asked_carol = await carol.send(world.general, f"{world.me.mention} {QUESTION}")
    asked_bob = await world.bob.send(world.general, "eva, and the pizza?")
    assert world.replies() == []  # one burst, one debounce
    world.fake.script.push_text("Hi carol! I can't tell you what came before.")
    world.fake.script.push_text("alice and bob: the boat trip, and pizza.")
    await world.env.advance_time(30)
    await world.env.advance_time(2)  # the streamed replies' last edits

    # Two turns, in the order of the last trigger each answers: carol's (#301), then bob's (#302).
    without, normal = world.replies()
    # carol's turn: nothing of the memory, nor alice's or bob's words.
    forbidden = await others_texts(world, world.chat_id, carol.id)
    assert "what did we plan?" in " ".join(forbidden) and "eva, and the pizza?" in forbidden
    assert_no_memory(without, forbidden)
    assert f'{QUESTION}"\n</turn>' in user_text(without.body)  # her words, quoted
    # The readers' turn: the whole memory, both readers addressed, carol's message left alone.
    view = await world.engine.prompt_view(world.chat_id)
    text = user_text(normal.body)
    assert [tool["name"] for tool in normal.body["tools"]] == TOOL_NAMES
    assert text.startswith(view.people_text() + view.memory_text()) and QUESTION in text  # she is in the tail
    assert 'Also addressed to you since your last reply: message #300 by "alice".' in text
    assert '#301 by "carol"' not in text.replace('Message #301 by "carol" gets a reply of its own', "")
    assert 'Answer message #302 by "bob".' in text
    assert 'Message #301 by "carol" gets a reply of its own, without your memory' in text
    first, second = world.bot_messages()
    assert first.reference is not None and first.reference.message_id == asked_carol.id
    assert first.content == f"Hi carol! I can't tell you what came before.\n\n{WITHOUT_MEMORY_LINE}"
    assert second.reference is not None and second.reference.message_id == asked_bob.id
    assert second.content == "alice and bob: the boat trip, and pizza."
    assert asked_alice.id < asked_carol.id < asked_bob.id


async def test_the_forget_me_tool_still_works_for_her(world: World) -> None:
    carol = await carol_without_history(world)
    world.fake.script.push_tool_use("forget_me", {})
    world.fake.script.push_text("Press the button and I'll forget you.")
    await carol.send(world.general, f"{world.me.mention} please forget me")
    (result,) = tool_results(world.replies()[-1])
    assert result["content"] == FORGET_ASKED.format(name="carol") and not result.get("is_error")
    (prompt,) = [m for m in world.bot_messages() if m.components]  # the button, only she can press
    assert prompt.content.startswith(f"<@{carol.id}> press Confirm")
    (reply,) = [m for m in world.bot_messages() if m.id != prompt.id]
    assert reply.content == f"Press the button and I'll forget you.\n\n{WITHOUT_MEMORY_LINE}"


async def test_threads_take_the_parents_permissions_and_a_dm_is_always_her_own(world: World) -> None:
    carol = await carol_without_history(world)
    backend = world.env.backend
    # A public thread of #general: its permissions are the parent's, so carol has no history.
    public = ChannelHandle(
        world.env, world.guild, backend.create_thread(world.general.id, "plans", world.bob.id)
    )
    await world.env.settle()
    for k in range(3):
        await world.bob.send(public, f"thread secret number {k}: the cabin key is under the mat")
    await carol.send(public, f"{world.me.mention} anything new here?")
    thread_chat = await world.engine.chat_by_discord_id(public.id)
    assert thread_chat is not None
    forbidden = await others_texts(world, thread_chat.id, carol.id)
    assert sum("cabin key" in text for text in forbidden) == 3
    assert_no_memory(world.replies()[-1], forbidden)

    # A private thread under a channel she may read: its members get the thread's memory.
    lounge = world.guild.create_text_channel("lounge")
    private = ChannelHandle(
        world.env,
        world.guild,
        backend.create_thread(lounge.id, "surprise", world.bob.id, type=ChannelType.PRIVATE_THREAD),
    )
    backend.add_thread_member(private.id, carol.id)
    backend.add_thread_member(private.id, world.me.id)
    await world.env.settle()
    await world.bob.send(private, "the surprise party is on friday")
    world.later()
    await carol.send(private, f"{world.me.mention} when is the party?")
    entry = world.replies()[-1]
    assert [tool["name"] for tool in entry.body["tools"]] == TOOL_NAMES
    assert "bob: the surprise party is on friday" in user_text(entry.body)

    # Her DM is her own: its memory answers her, whatever a server's channels deny.
    await carol.user.send_dm("remember: my favourite colour is teal")
    world.later()
    await carol.user.send_dm("what is my favourite colour?")
    dm = world.replies()[-1]
    assert [tool["name"] for tool in dm.body["tools"]] == TOOL_NAMES
    assert "carol: remember: my favourite colour is teal" in user_text(dm.body)


@pytest.mark.parametrize("settings", [{"ignore_bots": False}], indirect=True)
async def test_an_author_who_is_not_a_member_gets_what_everyone_may_read(world: World) -> None:
    # A webhook's message has no member behind it: @everyone's permissions decide.
    hook = world.guild.create_webhook(world.general, "relay")
    everyone = world.guild.id  # the @everyone role has the guild's id
    deny = discord.PermissionOverwrite(read_message_history=False).pair()[1].value
    world.env.backend.set_overwrite(world.general.id, Overwrite(everyone, OverwriteType.ROLE, deny=deny))
    await world.env.settle()
    await hook.send(f"{world.me.mention} {QUESTION}", username="Relay")
    forbidden = await others_texts(world, world.chat_id)
    assert_no_memory(world.replies()[-1], [t for t in forbidden if QUESTION not in t])
