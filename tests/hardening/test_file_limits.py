"""Every file `eva` reads has a size limit, and a file past it is one line naming the file and
the limit (exit 2), before the file fills memory: through the real `eva` command.

The files: a DiscordChatExporter export (256 MiB, read whole), a line of a JSONL export (1 MiB;
the file is read a line at a time), an author map (4 MiB), PERSONA_FILE (64 KiB), HEALTH_FILE
(64 KiB), the working folder's .env (1 MiB), and the embedded server's list of the processes
using it (1 MiB). The sizes are written here as numbers, not taken from the code; an author
map and a JSONL line of exactly the limit are still read. /dev/zero, which has no size to look
at first, is cut off at the limit too.
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.cli.support import Done, eva

KIB, MIB = 1024, 1024 * 1024
DATE = "2026-03-01T09:00:00+00:00"


def padded_json(path: Path, document: object, size: int) -> Path:
    """``document`` as JSON, padded with spaces (still valid JSON) to exactly ``size`` bytes."""
    body = json.dumps(document).encode()
    path.write_bytes(body + b" " * (size - len(body)))
    assert path.stat().st_size == size
    return path


def one_line(done: Done) -> str:
    assert done.code == 2 and done.out == "", (done.code, done.out, done.err)
    lines = done.err.splitlines()
    assert len(lines) == 1, done.err
    return lines[0]


async def test_import_files_and_author_maps_have_limits(
    tmp_path: Path, database_url: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    url = {"DATABASE_URL": database_url, "LOG_LEVEL": "WARNING"}
    log = tmp_path / "irc.jsonl"
    log.write_text(json.dumps({"i": 0, "author": "pia", "text": "hello", "date": DATE}) + "\n")

    exact = padded_json(tmp_path / "authors.json", {"pia": "41000000000000001"}, 4 * MIB)
    done = await eva(tmp_path, "import", str(log), "--chat", "mapped", "--author-ids", str(exact), **url)
    assert done.code == 0 and "imported 1 messages" in done.out, done.err
    over = padded_json(tmp_path / "big-authors.json", {"pia": "41000000000000001"}, 4 * MIB + 1)
    done = await eva(tmp_path, "import", str(log), "--chat", "over", "--author-ids", str(over), **url)
    assert one_line(done) == (
        "eva import: big-authors.json is larger than 4 MiB, the most an author map may be; list only "
        "the authors of the export being imported"
    )

    # A JSONL line: the one at the limit (newline included) is read, the next one is not.
    first = json.dumps({"i": 0, "author": "pia", "text": "", "date": DATE})
    line = first.replace('"text": ""', '"text": "' + "x" * (MIB - len(first) - 1) + '"') + "\n"
    assert len(line) == MIB
    long_log = tmp_path / "long.jsonl"
    long_log.write_text(line + line.replace('"i": 0', '"i": 1').replace('"x', '"xx'))
    done = await eva(tmp_path, "import", str(long_log), "--chat", "long", **url)
    assert one_line(done) == (
        "eva import: long.jsonl line 2: longer than 1 MiB, the most a JSONL line may be (one line holds "
        "one message); split or remove it"
    )

    # A DCE export past 256 MiB (sparse: no disk is used) is refused without being read.
    export = tmp_path / "big.json"
    with export.open("wb") as stream:
        stream.write(b'{\n  "messages": [\n')
        stream.truncate(256 * MIB + 1)
    done = await eva(tmp_path, "import", str(export), "--chat", "big", **url)
    assert one_line(done) == (
        "eva import: big.json is larger than 256 MiB, the most a DiscordChatExporter export may be; "
        "export a shorter date range (DiscordChatExporter's --after and --before)"
    )


async def test_settings_persona_heartbeat_and_server_files_have_limits(tmp_path: Path) -> None:
    persona = tmp_path / "persona.md"
    persona.write_text("You are Eva. " + "x" * (64 * KIB + 1 - len("You are Eva. ")))
    done = await eva(tmp_path, "run", PERSONA_FILE=str(persona), DISCORD_TOKEN="t")
    assert one_line(done) == (
        f"eva run: PERSONA_FILE {persona} is larger than 64 KiB, the most a persona file may be; it is "
        "sent with every reply, so keep it to a page or two"
    )
    done = await eva(tmp_path, "run", PERSONA_FILE="/dev/zero", DISCORD_TOKEN="t")  # no size to look at
    assert one_line(done).startswith("eva run: PERSONA_FILE /dev/zero is larger than 64 KiB")

    beat = padded_json(tmp_path / "beat.json", {"written_at": 0}, 64 * KIB + 1)
    done = await eva(tmp_path, "health", HEALTH_FILE=str(beat))
    assert one_line(done) == (
        f"eva health: HEALTH_FILE {beat} is larger than 64 KiB, the most a heartbeat file may be; point "
        "HEALTH_FILE at a file of its own"
    )

    pids = tmp_path / "data" / "pg" / ".handle_pids.json"
    pids.parent.mkdir(parents=True)
    padded_json(pids, [], MIB + 1)
    done = await eva(tmp_path, "migrate")
    assert one_line(done) == (
        f"eva migrate: {pids.resolve()} is larger than 1 MiB, the most the list of processes using the "
        "server may be; it is not the list the server writes: stop every eva using DATA_DIR and delete it"
    )

    env = tmp_path / ".env"
    env.write_text("LOG_LEVEL=INFO\n" + "#" * (MIB + 1 - len("LOG_LEVEL=INFO\n")))
    done = await eva(tmp_path, "health", HEALTH_FILE=str(beat))
    assert one_line(done) == (
        "eva health: .env is larger than 1 MiB, the most a settings file may be; a .env holds settings "
        "only, one per line"
    )
