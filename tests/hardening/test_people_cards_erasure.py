"""People cards through the real bot (discord.py on SimCord) and the real Anthropic summarizer
against the local fake (docs/design.md, people cards): built at the swap by the compactor's
model and shown in the reply prompt as a ``<people>`` block before the row; an erasure leaves
no card of the person and no card naming them, nor any trace of their words in any table
(the canary scan of tests/hardening/test_erasure_canary.py); someone who opted out gets no card
and is named in none."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select

from memory.compaction.card_prompts import card_system
from memory.storage.models import PersonCard
from tests.fakes.anthropic_compactor import is_cards_request
from tests.hardening.support import CapturedLogs, leaked, table_dump
from tests.worlds.hardening_world import World

CANARY = "quokkacanary"


async def card_texts(world: World, channel: Any) -> dict[int, str]:
    chat = await world.chat_of(channel)
    async with world.services.engine.sessions() as s:
        rows = (await s.scalars(select(PersonCard).where(PersonCard.chat_id == chat))).all()
        return {row.person_id: f"{row.name}: {row.text}" for row in rows}


async def talk(world: World) -> list[Any]:
    """alice about herself (the canary in her words), bob about himself, naming alice (a
    mention, as Discord resolves it), and ada once; then the compactor catches up."""
    sent = []
    for k in range(4):
        sent.append(await world.alice.send(world.general, f"alice {CANARY} runs {k}"))
        sent.append(await world.bob.send(world.general, f"bob fixes bikes {k} {world.alice.mention}"))
    sent.append(await world.admin.send(world.general, "ada says hi"))
    await world.settle()
    return sent


def card_calls(world: World) -> list[Any]:
    calls = world.fake.requests("cards")
    assert all(is_cards_request(entry.body) for entry in calls)
    return calls


def framed_as_data(entry: Any) -> bool:
    """A cards call: our constant system prompt, no tools, one user turn whose every step's lines
    sit inside one ``<input>``, and no other frame anywhere in it."""
    body = entry.body
    (turn,) = body["messages"]
    text = turn["content"]
    steps = text.count("\nStep ")
    return (
        body["system"] == [{"type": "text", "text": card_system()}]
        and "tools" not in body
        and steps >= 1
        and text.count("\n<input>\n") == steps == text.count("\n</input>")
        and not re.search(r"<\s*/?\s*(memory|tail|turn|chat|people|attachment)\b", text)
    )


async def test_cards_are_built_at_the_swap_and_read_by_the_reply_model(world: World) -> None:
    await talk(world)
    calls = card_calls(world)
    assert calls and all(entry.status == 200 for entry in calls), "the fake API accepted the cards call"
    assert all(framed_as_data(entry) for entry in calls)
    cards = await card_texts(world, world.general)
    assert {world.alice.id, world.bob.id} <= set(cards)
    assert CANARY in cards[world.alice.id] and "bob" in cards[world.bob.id]
    await world.bob.send(world.general, f"{world.me.mention} who is alice?")
    await world.settle()
    body = world.fake.requests("reply")[-1].body
    first = body["messages"][0]["content"]
    assert first[0]["text"].startswith("<people>\n") and first[0]["text"].endswith("</people>\n")
    assert "cache_control" not in first[0]  # cached with the row, under its mark
    assert cards[world.bob.id] in first[0]["text"]
    assert first[1]["text"].startswith("<memory>\n")
    view = await world.admin.slash(world.general, "memory people")
    assert view.response is not None and cards[world.bob.id] in view.response.content


async def test_forget_me_takes_the_card_and_every_card_naming_her(
    world: World, all_logs: CapturedLogs
) -> None:
    await talk(world)
    before = await card_texts(world, world.general)
    assert world.alice.id in before and any(
        "alice" in text for pid, text in before.items() if pid != world.alice.id
    )
    result = await world.alice.slash(world.general, "forget-me")
    await world.alice.click(result.response, label="Erase my messages")
    assert await world.ingest.flush(timeout=10)
    right_away = await card_texts(world, world.general)
    assert world.alice.id not in right_away and not [t for t in right_away.values() if "alice" in t.lower()]
    await world.settle()  # the lines are rebuilt, then the cards
    after = await card_texts(world, world.general)
    assert world.bob.id in after, "bob's card was rebuilt"
    assert world.alice.id not in after and not [t for t in after.values() if "alice" in t.lower()]
    dump = await table_dump(world.services.engine.sessions)
    assert CANARY not in dump
    assert not leaked(all_logs.text(), [CANARY])


async def test_a_deleted_message_leaves_no_card_holding_its_words(world: World) -> None:
    sent = await talk(world)
    assert CANARY in "".join((await card_texts(world, world.general)).values())
    for message in sent:
        if CANARY in message.content:
            await world.alice.delete(message)
    assert await world.ingest.flush(timeout=10)
    assert CANARY not in await table_dump(world.services.engine.sessions)
    await world.settle()
    assert CANARY not in await table_dump(world.services.engine.sessions)
    assert world.bob.id in await card_texts(world, world.general)


async def test_someone_who_opted_out_gets_no_card_and_is_named_in_none(world: World) -> None:
    await talk(world)
    for k in range(16):  # enough for a swap: lines that name bob and not her
        await world.bob.send(world.general, f"bob rides to work {k}")
    await world.settle()
    before = await card_texts(world, world.general)
    assert world.alice.id in before and any("alice" in t for p, t in before.items() if p != world.alice.id)
    # Opted out without an erasure (the log still names her: her messages, bob's mentions).
    await world.services.engine.opt_out(world.guild.id, world.alice.id)
    assert await card_texts(world, world.general) == {}, "her card and the cards naming her went at once"
    await world.settle()
    cards = await card_texts(world, world.general)
    assert world.bob.id in cards, "bob's card was built again, from the lines that do not name her"
    assert world.alice.id not in cards and not [t for t in cards.values() if "alice" in t.lower()]
