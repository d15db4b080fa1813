"""Imports keep every message or refuse the file, store only ids an erasure can name, and can be
wiped when they share a live channel's name: through the real `eva` command, on the test
database.

- A message id repeated with the same message is imported once, and replies after it point at
  the right messages; a message id repeated with a different message refuses the file, naming
  both places, and imports nothing (DiscordChatExporter ids and JSONL ``i`` alike).
- An author id no Discord account can have (0, 2^63 and above, not digits) refuses the file;
  the expected ids come from Discord's definition of a snowflake (a 64-bit number, never 0,
  below 2^63 until 2084), and the real `eva forget --user` refuses exactly the same ones while
  erasing the ids the import accepted at both ends of the range.
- `eva wipe --chat NAME` matching a live channel and an import lists both (id, kind, guild,
  messages) and wipes nothing; `eva wipe --id ID` wipes the one chosen.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.storage.chats import ensure_chat
from memory.storage.log import ChatKey, NewMessage, append
from tests.cli.support import Done, eva

GUILD = 700100200300400500
CHANNEL = 800100200300400500
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PIA, MAX = 41000000000000001, 41000000000000002


def dce_message(
    ident: int, author: int | str, content: str, minute: int, reply_to: int | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": str(ident), "type": "Reply" if reply_to else "Default",
        "timestamp": (START + timedelta(minutes=minute)).isoformat(), "timestampEdited": None,
        "content": content, "author": {"id": str(author), "name": f"user{author}", "nickname": f"Nick{author}",
                                       "isBot": False},
        "attachments": [], "embeds": [], "stickers": [], "mentions": [],
    }  # fmt: skip
    if reply_to:
        message["reference"] = {"messageId": str(reply_to), "channelId": str(CHANNEL), "guildId": str(GUILD)}
    return message


def dce_file(path: Path, messages: list[dict[str, Any]], guild: int = GUILD) -> Path:
    document = {
        "guild": {"id": str(guild), "name": "Friends"},
        "channel": {"id": str(CHANNEL), "type": "GuildTextChat", "name": "general"},
        "messages": messages, "messageCount": len(messages),
    }  # fmt: skip
    path.write_text(json.dumps(document, indent=2))
    return path


async def import_file(tmp: Path, url: str, path: Path, chat: str, *extra: str) -> Done:
    return await eva(tmp, "import", str(path), "--chat", chat, *extra, DATABASE_URL=url, LOG_LEVEL="WARNING")


async def logged(sessions: async_sessionmaker[AsyncSession], chat: str) -> list[tuple[Any, ...]]:
    async with sessions() as s:
        rows = await s.execute(
            text("SELECT m.idx, m.text, m.reply_to FROM messages m JOIN chats c ON c.id = m.chat_id "
                 "WHERE c.name = :n ORDER BY m.idx"), {"n": chat})  # fmt: skip
        return [tuple(row) for row in rows]


async def chat_count(sessions: async_sessionmaker[AsyncSession]) -> int:
    async with sessions() as s:
        return int(await s.scalar(text("SELECT count(*) FROM chats")) or 0)


async def test_a_repeated_message_id_is_kept_once_or_refuses_the_file(
    tmp_path: Path, database_url: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    a, b, c, d = 900000000000000001, 900000000000000002, 900000000000000003, 900000000000000004
    same = [
        dce_message(a, PIA, "first words", 0),
        dce_message(b, MAX, "second words", 1),
        dce_message(a, PIA, "first words", 0),  # the same message again (overlapping exports)
        dce_message(c, PIA, "answering the second", 2, reply_to=b),
        dce_message(d, MAX, "answering the first", 3, reply_to=a),
    ]
    done = await import_file(tmp_path, database_url, dce_file(tmp_path / "same.json", same), "same")
    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        "imported 4 messages into chat 'same'",
        "note: 1 messages were in the file twice (the same id and the same message) and were imported once",
    ]
    assert await logged(sessions, "same") == [
        (0, "first words", None),
        (1, "second words", None),
        (2, "answering the second (reply to #1)", 1),
        (3, "answering the first (reply to #0)", 0),
    ]

    different = [*same[:2], dce_message(a, PIA, "other words under the same id", 0), *same[3:]]
    done = await import_file(tmp_path, database_url, dce_file(tmp_path / "other.json", different), "other")
    assert (done.code, done.out) == (2, "")
    assert done.err.splitlines() == [
        f"eva import: other.json messages[2]: id {a} is already the id of messages[0], a different "
        "message (its 'content' differs); keep one of the two and import again (nothing was imported)"
    ]
    assert await chat_count(sessions) == 1  # only "same"

    # JSONL: "i" names a message the same way (replies name it).
    lines = [{"i": 0, "author": "pia", "text": "hello", "date": START.isoformat()},
             {"i": 1, "author": "max", "text": "hi pia", "date": START.isoformat(), "reply_to": [0]},
             {"i": 0, "author": "pia", "text": "hello", "date": START.isoformat()},
             {"i": 2, "author": "pia", "text": "how are you", "date": START.isoformat(), "reply_to": [1]}]  # fmt: skip
    plain = tmp_path / "same.jsonl"
    plain.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = await import_file(tmp_path, database_url, plain, "plain")
    assert (
        done.code == 0
        and "imported 3 messages" in done.out
        and "1 messages were in the file twice" in done.out
    )
    assert [row[2] for row in await logged(sessions, "plain")] == [None, 0, 1]
    lines[2]["author"] = "max"
    clash = tmp_path / "clash.jsonl"
    clash.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = await import_file(tmp_path, database_url, clash, "clash")
    assert done.code == 2 and done.err.splitlines() == [
        "eva import: clash.jsonl line 3: 'i' 0 is already the 'i' of line 1, a different message (its "
        "'author' differs); keep one of the two and import again (nothing was imported)"
    ]
    assert await chat_count(sessions) == 2


# Discord's snowflake: a 64-bit number, never 0; the top bit is the timestamp's 42nd, clear
# until 2084, and PostgreSQL's BIGINT ends there too. Written here, not taken from the code.
UNERASABLE = ["0", "9223372036854775808", "-5"]  # zero, past BIGINT, negative
ERASABLE = ["1", "9223372036854775807"]


async def test_author_ids_no_erasure_can_name_are_refused_at_import(
    tmp_path: Path, database_url: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    for k, author in enumerate(UNERASABLE):
        messages = [
            dce_message(900000000000000010, PIA, "fine", 0),
            dce_message(900000000000000011, author, "x", 1),
        ]
        done = await import_file(
            tmp_path, database_url, dce_file(tmp_path / f"bad{k}.json", messages), f"bad{k}"
        )
        assert done.code == 2 and len(done.err.splitlines()) == 1, (author, done.err)
        assert done.err.startswith(
            f"eva import: bad{k}.json messages[1] (message 900000000000000011): 'author.id' "
        )
        assert done.err.rstrip().endswith("(nothing was imported)")
        forget = await eva(tmp_path, "forget", "--user", author, "--yes", DATABASE_URL=database_url)
        assert forget.code == 2 and "not a Discord id" in forget.err, (author, forget.err)
    assert await chat_count(sessions) == 0
    done = await import_file(tmp_path, database_url, dce_file(tmp_path / "zero.json", [
        dce_message(900000000000000012, 0, "x", 1)]), "zero")  # fmt: skip
    assert done.err.splitlines() == [
        "eva import: zero.json messages[0] (message 900000000000000012): 'author.id' 0 is no Discord "
        "account's id (a whole number from 1 to 9223372036854775807), so `eva forget --user` could never "
        "erase this author; give the author their real id (nothing was imported)"
    ]

    # The ends of the range import, and `eva forget --user` erases them.
    messages = [
        dce_message(900000000000000020 + k, int(author), f"words of {author}", k)
        for k, author in enumerate(ERASABLE)
    ]
    done = await import_file(tmp_path, database_url, dce_file(tmp_path / "edges.json", messages), "edges")
    assert done.code == 0, done.err
    for author in ERASABLE:
        forget = await eva(tmp_path, "forget", "--user", author, "--yes", DATABASE_URL=database_url)
        assert forget.code == 0 and any(
            line.startswith("erased 1 messages in 1 chats") for line in forget.out.splitlines()
        ), forget.err
    assert [row[1] for row in await logged(sessions, "edges")] == [None, None]  # erased: slots only

    # The author map (JSONL) follows the same rule.
    log = tmp_path / "irc.jsonl"
    log.write_text(json.dumps({"i": 0, "author": "pia", "text": "hello", "date": START.isoformat()}) + "\n")
    authors = tmp_path / "authors.json"
    authors.write_text(json.dumps({"pia": 0}))
    done = await import_file(tmp_path, database_url, log, "mapped", "--author-ids", str(authors))
    assert done.code == 2 and done.err.splitlines() == [
        "eva import: authors.json: the id of 'pia' is no Discord account's id (a whole number from 1 to "
        "9223372036854775807), so `eva forget --user` could never erase them; give their real id or leave "
        "them out"
    ]


async def test_wipe_lists_the_chats_a_name_matches_and_takes_a_chat_id(
    tmp_path: Path, database_url: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    async with sessions() as s, s.begin():  # the live channel, as the bot logs it
        live = await ensure_chat(s, ChatKey(kind="text", name="general", discord_id=CHANNEL, guild_id=GUILD))
        for k in range(3):
            await append(s, live, NewMessage(author_name="pia", created_at=START, content=f"live {k}",
                                             author_id=PIA, snowflake=910000000000000000 + k))  # fmt: skip
    messages = [dce_message(900000000000000030 + k, MAX, f"imported {k}", k) for k in range(2)]
    done = await import_file(tmp_path, database_url, dce_file(tmp_path / "general.json", messages), "general")
    assert done.code == 0, done.err
    async with sessions() as s:
        imported = int(await s.scalar(text("SELECT id FROM chats WHERE kind = 'imported'")) or 0)

    done = await eva(tmp_path, "wipe", "--chat", "general", "--yes", DATABASE_URL=database_url)
    assert (done.code, done.out) == (2, "")
    assert done.err.splitlines() == [
        "eva wipe: 2 chats match 'general'; nothing was wiped. Choose one with `eva wipe --id ID`:",
        f"  id {live}: text 'general', guild {GUILD}, Discord channel {CHANNEL}, 3 messages",
        f"  id {imported}: imported 'general', guild {GUILD}, 2 messages",
    ]
    assert len(await logged(sessions, "general")) == 5

    done = await eva(tmp_path, "wipe", "--id", str(imported), "--yes", DATABASE_URL=database_url)
    assert done.code == 0 and any(
        line.startswith("wiped chat 'general': 2 messages") for line in done.out.splitlines()
    ), done.err
    assert [row[1] for row in await logged(sessions, "general")] == ["live 0", "live 1", "live 2"]
    done = await eva(tmp_path, "wipe", "--id", str(imported), "--yes", DATABASE_URL=database_url)
    assert (done.code, done.err.strip()) == (2, f"eva wipe: no chat has the id {imported}")
    done = await eva(
        tmp_path, "wipe", "--chat", "general", "--yes", DATABASE_URL=database_url
    )  # one match now
    assert done.code == 0 and any(
        line.startswith("wiped chat 'general': 3 messages") for line in done.out.splitlines()
    ), done.err
    assert await chat_count(sessions) == 1  # the live channel keeps its chat (and settings)
