"""/export-me: a private file of exactly the person's own kept messages, with their
chat, date and text; nobody else's words, nothing erased, nothing of another scope; at most once
an hour per person, kept in the database."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.people import EXPORT_TOO_SOON
from memory.errors import UserFacingError
from memory.storage.log import ChatKey
from memory.storage.models import RateMark
from tests.worlds.commands_world import LONG_MESSAGE_INDEX, World, causes, message, reply_text

# What commands_world seeds, restated: general's message k is alice's when k is even.
SEEDED_ALICE = {f"message {k} about the canoe trip and paddles, number {k}" for k in range(0, 64, 2)}
assert LONG_MESSAGE_INDEX % 2 == 1  # the long one is bob's


async def exported(result: Any) -> dict[str, Any]:
    assert result.response is not None and result.response.ephemeral
    (attachment,) = result.response.attachments
    assert attachment.filename.endswith(".json")
    return json.loads(await attachment.read())


async def an_hour_passes(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as s, s.begin():
        await s.execute(update(RateMark).values(at=RateMark.at - timedelta(hours=1, seconds=1)))


async def test_export_me_holds_exactly_the_persons_own_messages(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    await world.bob.send(world.general, "bob canary 5e1f: my bank pin is 0000")
    await world.alice.send(world.general, f"{world.bob.mention} padel at 7, alice's own words")
    gone = await world.alice.send(world.general, "alice erased canary 9c2d")
    await world.alice.send(world.other, "alice in other, live")
    assert await world.ingest.flush(timeout=5)
    await world.engine.erase_messages(world.general_chat, [gone.id])
    user = world.alice.user
    dm_chat = await world.engine.ensure_chat(ChatKey("dm", "dm-alice", discord_id=user.dm_channel.id))
    await world.engine.append_many(dm_chat, [message(user, 300, "dm canary 77aa, only in our DMs")])

    result = await world.alice.slash(world.general, "export-me")
    data = await exported(result)
    texts = {m["text"] for m in data["messages"]}
    bob_mention = "@" + world.bob.name
    expected = SEEDED_ALICE | {
        "alice says hello in other",
        f"{bob_mention} padel at 7, alice's own words",
        "alice in other, live",
    }
    assert texts == expected
    assert len(data["messages"]) == len(expected) == data["message_count"]
    sent = json.dumps(data)
    assert "5e1f" not in sent and "9c2d" not in sent and "77aa" not in sent
    assert {m["chat"] for m in data["messages"]} == {"general", "other"}
    first = next(
        m for m in data["messages"] if m["text"] == "message 0 about the canoe trip and paddles, number 0"
    )
    assert first["date"].startswith("2026-01-05T09:00:00")
    chats = {c["chat"]: c for c in data["chats"]}
    assert chats["general"]["messages"] == 33 and chats["other"]["messages"] == 2
    assert chats["general"]["lines_naming_you"] >= 1  # the row's lines credit alice by name
    assert data["messages_of_others_that_mention_you"] == 0
    assert (
        "/forget-me in this server would erase every message listed here" in data["what_erasure_would_remove"]
    )
    assert "35 messages" in reply_text(result)

    # Once an hour, across scopes: a DM export now is refused, one line, no file.
    refused = await user.slash("export-me")
    assert reply_text(refused).startswith(EXPORT_TOO_SOON.split("{")[0])
    assert refused.response is not None and not refused.response.attachments
    assert [type(e) for e in causes(world.env.errors)] == [UserFacingError]
    await an_hour_passes(sessions)
    in_dm = await exported(await user.slash("export-me"))
    assert [m["text"] for m in in_dm["messages"]] == ["dm canary 77aa, only in our DMs"]
    assert in_dm["scope"] == "dms"


async def test_bobs_export_names_the_mention_and_holds_none_of_alices_words(world: World) -> None:
    await world.alice.send(world.general, f"{world.bob.mention} alice canary 31b7 for bob")
    assert await world.ingest.flush(timeout=5)
    data = await exported(await world.bob.slash(world.other, "export-me"))
    assert "31b7" not in json.dumps(data) and "alice says hello" not in json.dumps(data)
    assert data["messages_of_others_that_mention_you"] == 1
    assert len(data["messages"]) == 32 + 6  # general's odd messages, other's six zebras
