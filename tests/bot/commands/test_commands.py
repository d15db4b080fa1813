"""/zoom, /recall, /forget-me, /remember-me and the error tree, in SimCord with real PostgreSQL."""

from __future__ import annotations

import pytest
import simcord
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.pagination import PAGE_CHARS, paginate
from bot.commands.people import NO_MEMORY_HERE, zoom_text
from bot.commands.ui import address_choices
from memory.errors import BadRequest, UserFacingError
from memory.storage.models import Message
from tests.worlds.commands_world import LONG_MESSAGE_INDEX, World, authored, causes, counts, reply_text


async def test_zoom_answers_from_the_channel_it_is_used_in(world: World) -> None:
    in_general = reply_text(await world.alice.slash(world.general, "zoom", address="0+1"))
    in_other = reply_text(await world.alice.slash(world.other, "zoom", address="0+1"))
    assert in_general.startswith("#0 2026-01-05 09:00 alice: message 0 about the canoe trip")
    assert in_other.startswith("#0 2026-01-05 10:40 bob: the zebra 0")
    row = await world.engine.row_addresses(world.general_chat)
    wide = row[0]
    shown = reply_text(await world.bob.slash(world.general, "zoom", address=wide))
    assert shown == await world.engine.zoom_address(world.general_chat, wide)
    assert "zebra" not in shown and len(shown.splitlines()) >= 2


async def test_recall_searches_only_this_channel(world: World) -> None:
    here = reply_text(await world.alice.slash(world.general, "recall", query="zebra"))
    assert here == "No message matches 'zebra'."
    there = reply_text(await world.alice.slash(world.other, "recall", query="zebra"))
    assert "Hit 1: message #" in there and "the zebra" in there and "canoe" not in there
    by_alice = reply_text(await world.bob.slash(world.other, "recall", query="zebra", author=world.alice))
    assert by_alice == "No message from alice matches 'zebra'."
    hello = reply_text(await world.bob.slash(world.other, "recall", query="hello", author=world.alice))
    assert ">#6 " in hello and "alice says hello" in hello


async def test_bad_arguments_get_one_clear_line_and_change_nothing(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    before = await counts(sessions)
    cases = [
        ("zoom", {"address": "3+2"}, "3+2: the first message of a 2-message line must be a multiple of 2"),
        ("zoom", {"address": "999999+1"}, "999999+1: this chat has only 64 messages (ids 0..63)"),
        (
            "zoom",
            {"address": "banana"},
            "'banana' is not a line address: expected id+n with two whole numbers, like 40+8",
        ),
        ("recall", {"query": "   "}, "recall needs at least one word to search for"),
    ]
    for name, options, expected in cases:
        sent = len(world.env.http_requests)
        result = await world.alice.slash(world.general, name, **options)
        assert reply_text(result) == expected
        # recall defers first (callback type 5), so its error arrives as the followup
        callbacks = [
            (r.json or {}).get("type") for r in world.env.http_requests[sent:] if r.path.endswith("/callback")
        ]
        assert callbacks == ([5] if name == "recall" else [4])
        assert not result.followups or result.followups[0].id == result.response.id  # type: ignore[union-attr]
    assert all(isinstance(e, BadRequest) for e in causes(world.env.errors))
    assert await counts(sessions) == before


async def test_a_channel_without_memory_says_so(world: World) -> None:
    assert reply_text(await world.alice.slash(world.empty, "zoom", address="0+1")) == NO_MEMORY_HERE
    assert reply_text(await world.alice.slash(world.empty, "recall", query="canoe")) == NO_MEMORY_HERE
    assert [type(e) for e in causes(world.env.errors)] == [UserFacingError, UserFacingError]
    assert await world.alice.autocomplete(world.empty, "zoom", "address", "") == []


async def test_zoom_autocomplete_offers_this_rows_addresses(world: World) -> None:
    row = await world.engine.row_addresses(world.general_chat)
    assert len(row) >= 3
    offered = await world.alice.autocomplete(world.general, "zoom", "address", "")
    assert [c["value"] for c in offered] == row[:25]
    typed = row[1][:2]
    narrowed = await world.alice.autocomplete(world.general, "zoom", "address", typed)
    assert narrowed and all(c["value"].startswith(typed) for c in narrowed)
    assert await world.alice.autocomplete(world.other, "zoom", "address", "") == []  # other has no row yet


def test_address_choices_prefers_prefixes_and_caps_at_25() -> None:
    addresses = [f"{k}+1" for k in range(40)]
    assert [c.value for c in address_choices(addresses, "3")] == [
        "3+1",
        "30+1",
        "31+1",
        "32+1",
        "33+1",
        "34+1",
        "35+1",
        "36+1",
        "37+1",
        "38+1",
        "39+1",
    ]
    assert len(address_choices(addresses, "")) == 25
    assert [c.value for c in address_choices(["0+8", "8+4"], "+4")] == ["8+4"]


async def test_a_long_answer_pages_with_buttons_only_the_asker_can_press(world: World) -> None:
    whole = await zoom_text(world.engine, world.general_chat, f"{LONG_MESSAGE_INDEX}+1")
    pages = paginate(whole)
    assert len(whole) > PAGE_CHARS and len(pages) == 2 and " ".join(pages) == whole
    result = await world.alice.slash(world.general, "zoom", address=f"{LONG_MESSAGE_INDEX}+1")
    assert reply_text(result) == pages[0]
    with pytest.raises(simcord.SetupError):  # an ephemeral answer: bob cannot even see the buttons
        await world.bob.click(result.response, label="Next")  # type: ignore[arg-type]
    await world.alice.click(result.response, label="Next")  # type: ignore[arg-type]
    assert reply_text(result) == pages[1]
    with pytest.raises(simcord.SetupError, match="disabled"):
        await world.alice.click(result.response, label="Next")  # type: ignore[arg-type]
    await world.alice.click(result.response, label="Previous")  # type: ignore[arg-type]
    assert reply_text(result) == pages[0]
    # A deferred answer (recall) pages the same way: the buttons sit on the followup.
    found = await world.bob.slash(world.general, "recall", query="canoe")
    first = reply_text(found)
    assert first.startswith("Hit 1: message #")
    await world.bob.click(found.response, label="Next")  # type: ignore[arg-type]
    assert reply_text(found) != first and "Hit " in reply_text(found)


def test_paginate_keeps_lines_whole_and_cuts_only_overlong_ones() -> None:
    lines = [f"#{k} " + "x" * 300 for k in range(20)]
    pages = paginate("\n".join(lines))
    assert all(len(p) <= PAGE_CHARS for p in pages)
    assert "\n".join(pages).split("\n") == lines
    huge = "y " * 3000
    cut = paginate(huge)
    assert len(cut) == 4 and all(len(p) <= PAGE_CHARS for p in cut)
    assert "".join(cut).replace(" ", "") == huge.replace(" ", "")
    assert paginate("") == ["(empty)"]


async def test_forget_me_erases_only_after_the_owner_confirms(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    alice_before = await authored(sessions, world.alice.id)
    bob_before = await authored(sessions, world.bob.id)
    assert alice_before == 33  # 32 in general, 1 in other
    result = await world.alice.slash(world.general, "forget-me")
    assert "Nothing is erased until you press the button" in reply_text(result)
    assert await authored(sessions, world.alice.id) == alice_before
    with pytest.raises(simcord.SetupError):
        await world.bob.click(result.response, label="Erase my messages")  # type: ignore[arg-type]
    assert await authored(sessions, world.alice.id) == alice_before
    await world.alice.click(result.response, label="Erase my messages")  # type: ignore[arg-type]
    text = reply_text(result)
    assert text.startswith("Erased 33 messages; ") and "lines are being rebuilt without them" in text
    assert await authored(sessions, world.alice.id) == 0
    assert await authored(sessions, world.bob.id) == bob_before
    assert await world.engine.opted_out(world.guild.id) == set()  # no opt-out unless asked
    shown = await world.engine.zoom_address(world.general_chat, "0+1")
    assert "(erased)" in shown and "alice" not in shown


async def test_forget_me_cancel_changes_nothing(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    before = await counts(sessions)
    result = await world.alice.slash(world.general, "forget-me", stop_remembering=True)
    await world.alice.click(result.response, label="Cancel")  # type: ignore[arg-type]
    assert reply_text(result) == "Cancelled. Nothing was changed."
    assert await counts(sessions) == before


async def test_opting_out_lasts_until_remember_me(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    async def texts_by_bob() -> list[str]:
        assert await world.ingest.flush(timeout=5)
        async with sessions() as s:
            rows = await s.scalars(select(Message.text).where(Message.author_id == world.bob.id))
            return [t for t in rows.all() if t is not None]

    await world.bob.send(world.general, "logged as usual")
    assert "logged as usual" in await texts_by_bob()
    result = await world.bob.slash(world.other, "forget-me", stop_remembering=True)
    assert "stop remembering your messages from now on" in reply_text(result)
    assert await world.engine.opted_out(world.guild.id) == set()  # not before the press
    await world.bob.click(result.response, label="Erase my messages")  # type: ignore[arg-type]
    assert "I will not remember your messages in this server from now on" in reply_text(result)
    assert await world.engine.opted_out(world.guild.id) == {world.bob.id}
    assert await texts_by_bob() == []
    await world.bob.send(world.general, "said while opted out")
    await world.alice.send(world.general, "alice is still remembered")
    assert await texts_by_bob() == []
    assert await authored(sessions, world.alice.id) == 34
    again = reply_text(await world.bob.slash(world.general, "remember-me"))
    assert again == "Done: I will remember your messages in this server again from now on."
    assert await world.engine.opted_out(world.guild.id) == set()
    await world.bob.send(world.general, "back in the memory")
    assert await texts_by_bob() == ["back in the memory"]
    assert "You were not opted out" in reply_text(await world.bob.slash(world.general, "remember-me"))


async def test_forget_me_in_dms_erases_that_persons_dm_memory(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    from memory.storage.log import ChatKey
    from tests.worlds.commands_world import message

    user = world.alice.user
    dm_chat = await world.engine.ensure_chat(ChatKey("dm", "dm-alice", discord_id=user.dm_channel.id))
    await world.engine.append_many(dm_chat, [message(user, 300 + k, f"a private note {k}") for k in range(3)])
    in_dm = reply_text(await user.slash("zoom", address="2+1"))
    assert "a private note 2" in in_dm
    result = await user.slash("forget-me")
    assert "in our direct messages" in reply_text(result)
    await user.click(result.response, label="Erase my messages")
    assert reply_text(result) == "Erased 3 messages: our direct-message memory is gone."
    assert await world.engine.message_count(dm_chat) == 0
    assert await authored(sessions, user.id) == 33  # the server's memory is another scope


async def test_an_unexpected_error_is_logged_with_ids_only_and_answered_politely(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from structlog.testing import capture_logs

    from bot.commands.tree import APOLOGY

    words = "the hidden " + "words of a message"  # built at run time: not in the source shown in tracebacks

    async def broken(*_args: object, **_kwargs: object) -> str:
        raise RuntimeError(words)

    monkeypatch.setattr(world.engine, "recall", broken)
    with capture_logs() as logs:
        result = await world.alice.slash(world.general, "recall", query="private words")
    assert reply_text(result) == APOLOGY
    assert [type(e) for e in causes(world.env.errors)] == [RuntimeError]
    failed = [e for e in logs if e["event"] == "command.failed"]
    assert len(failed) == 1
    entry = failed[0]
    assert entry["guild_id"] == world.guild.id and entry["channel_id"] == world.general.id
    assert entry["user_id"] == world.alice.id and entry["command"] == "recall"
    assert "RuntimeError" in entry["traceback"]
    assert "hidden words" not in repr(logs) and "private words" not in repr(logs)


async def test_an_interaction_that_is_gone_is_dropped_without_raising(world: World) -> None:
    from structlog.testing import capture_logs

    world.env.inject_error("POST", "/interactions/*", status=404, code=10062, message="Unknown interaction")
    with capture_logs() as logs:
        result = await world.alice.slash(world.general, "zoom", address="3+2")
    assert result.response is None
    assert [type(e) for e in causes(world.env.errors)] == [BadRequest]  # only the bad address itself
    assert any(e["event"] == "interaction.gone" and e["code"] == 10062 for e in logs)


def test_error_sentences_by_kind() -> None:
    from discord import app_commands

    from bot.commands.tree import NEED_MANAGE_SERVER, OUT_OF_DATE, SERVER_ONLY, message_for

    assert message_for(BadRequest("recall needs at least one word")) == "recall needs at least one word"
    assert message_for(app_commands.MissingPermissions(["manage_guild"])) == NEED_MANAGE_SERVER
    assert message_for(app_commands.NoPrivateMessage()) == SERVER_ONLY
    assert message_for(app_commands.CommandNotFound("zoom", [])) == OUT_OF_DATE
    assert message_for(RuntimeError("a bug")) is None  # ours: logged, answered with the apology


async def test_zoom_text_joins_every_page_of_a_very_long_message(world: World) -> None:
    from datetime import timedelta

    from memory.storage.log import NewMessage
    from tests.worlds.commands_world import START

    long = " ".join(f"w{n}" for n in range(2500))  # ~13,400 characters: 4 engine pages of 4,000
    moment = START + timedelta(days=1)
    [index] = await world.engine.append_many(
        world.other_chat, [NewMessage("alice", moment, long, author_id=1)]
    )
    assert "(page 1 of 4 of message #7." in await world.engine.zoom_address(world.other_chat, "7+1")
    whole = await zoom_text(world.engine, world.other_chat, f"{index}+1")
    assert whole == f"#7 2026-01-06 09:00 alice: {long}"
    pages = paginate(whole)
    assert all(len(p) <= PAGE_CHARS for p in pages) and len(pages) >= len(whole) / PAGE_CHARS
    assert " ".join(pages) == whole  # one long line, cut at spaces: nothing lost
