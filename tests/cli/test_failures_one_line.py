"""Each startup and CLI failure, through the real `eva` process: one line naming what to fix,
no traceback, exit code 2 for bad input and 1 for a service that does not answer, well within
60 s. Nothing here reaches Discord or Anthropic: unreachable means a closed local port."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.storage.database import with_database
from tests.cli.support import Done, eva
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord

UNREACHABLE_DB = "postgresql://x@127.0.0.1:1/db"
UNREACHABLE_DISCORD = "http://127.0.0.1:9/api/v10"
TOKENS = {"DISCORD_TOKEN": "tok", "ANTHROPIC_API_KEY": "key"}


def one_clear_line(done: Done, code: int, *names: str) -> str:
    assert done.code == code, (done.code, done.lines)
    assert len(done.lines) == 1, done.lines
    assert "Traceback" not in done.out + done.err
    assert done.seconds < 60
    (line,) = done.lines
    for name in names:
        assert name in line, (name, line)
    return line


@pytest.fixture
async def fakes() -> AsyncIterator[dict[str, str]]:
    """Discord and Anthropic fakes that accept the tokens: settings pointing at them."""
    async with FakeDiscord() as discord_fake, FakeAnthropic() as anthropic_fake:
        yield {
            **TOKENS,
            "DISCORD_API_BASE": discord_fake.api_base,
            "ANTHROPIC_BASE_URL": anthropic_fake.base_url,
        }


@pytest.mark.parametrize(("name", "value", "code"), [
    ("DATABASE_URL", "not-a-url", 2),
    ("PRICES", "{bad", 2),
    ("LOG_LEVEL", "verbose", 2),
])  # fmt: skip
@pytest.mark.parametrize("command", ["run", "doctor"])
async def test_a_bad_setting_is_one_line_naming_it(
    tmp_path: Path, command: str, name: str, value: str, code: int
) -> None:
    line = one_clear_line(
        await eva(tmp_path, command, **{name: value}), code, f"eva {command}: bad settings: {name}"
    )
    if name == "LOG_LEVEL":
        assert "DEBUG, INFO, WARNING, ERROR" in line
    assert not (tmp_path / "data").exists(), "nothing was started for a bad setting"


async def test_run_with_an_unreachable_database_is_one_line(tmp_path: Path) -> None:
    line = one_clear_line(
        await eva(tmp_path, "run", DATABASE_URL=UNREACHABLE_DB, **TOKENS), 1, "DATABASE_URL"
    )
    assert (
        line
        == "eva run: cannot reach the database at DATABASE_URL (127.0.0.1:1/db): connection refused (is PostgreSQL running there?)"
    )


async def test_doctor_with_an_unreachable_database_has_one_problem_line(
    tmp_path: Path, fakes: dict[str, str]
) -> None:
    done = await eva(tmp_path, "doctor", DATABASE_URL=UNREACHABLE_DB, **fakes)
    assert done.code == 1 and done.err == "" and done.seconds < 60
    problems = [line for line in done.lines if not line.split(": ", 1)[1].startswith("ok")]
    assert problems == [
        "database: cannot reach the database at DATABASE_URL (127.0.0.1:1/db): connection refused (is PostgreSQL running there?)"
    ]


async def test_a_missing_database_on_a_live_server_is_named(tmp_path: Path, postgres_admin_url: str) -> None:
    url = with_database(postgres_admin_url, f"eva_missing_{uuid.uuid4().hex[:8]}")
    line = one_clear_line(await eva(tmp_path, "stats", DATABASE_URL=url), 1, "DATABASE_URL")
    assert line.endswith("that database does not exist")


async def test_run_with_discord_unreachable_is_one_line(tmp_path: Path, database_url: str) -> None:
    done = await eva(
        tmp_path, "run", DATABASE_URL=database_url, DISCORD_API_BASE=UNREACHABLE_DISCORD, **TOKENS
    )
    line = one_clear_line(done, 1, "DISCORD_API_BASE")
    assert line == "eva run: cannot reach Discord at DISCORD_API_BASE (127.0.0.1:9): connection refused"


async def test_run_with_the_gateway_unreachable_names_the_gateway(tmp_path: Path, database_url: str) -> None:
    async with FakeDiscord() as discord_fake:  # REST answers; the gateway address does not
        done = await eva(tmp_path, "run", DATABASE_URL=database_url, DISCORD_API_BASE=discord_fake.api_base,
                         DISCORD_GATEWAY_URL="ws://127.0.0.1:9/", **TOKENS)  # fmt: skip
    assert done.code == 1 and done.seconds < 60 and "Traceback" not in done.err
    assert (
        done.lines[-1]
        == "eva run: cannot reach the Discord gateway at DISCORD_GATEWAY_URL (127.0.0.1:9): connection refused"
    )


async def test_sync_commands_with_discord_unreachable_is_one_line(tmp_path: Path) -> None:
    done = await eva(tmp_path, "sync-commands", DISCORD_API_BASE=UNREACHABLE_DISCORD, **TOKENS)
    line = one_clear_line(done, 1, "DISCORD_API_BASE")
    assert (
        line
        == "eva sync-commands: cannot reach Discord at DISCORD_API_BASE (127.0.0.1:9): connection refused"
    )


async def test_a_missing_persona_file_stops_run_before_connecting_to_anything(tmp_path: Path) -> None:
    # The database and Discord are both unreachable: a line about them would mean they came first.
    done = await eva(tmp_path, "run", DATABASE_URL=UNREACHABLE_DB, DISCORD_API_BASE=UNREACHABLE_DISCORD,
                     PERSONA_FILE=str(tmp_path / "persona.md"), **TOKENS)  # fmt: skip
    line = one_clear_line(done, 2, "PERSONA_FILE", "persona.md")
    assert "does not exist" in line


@pytest.mark.parametrize("args", [
    ("zoom", "--chat", b"\xff", "1+1"),
    ("stats", "--chat", b"\xff"),
    ("view", "--chat", b"caf\xe9"),
    ("compact", "--chat", b"\xff", "--fake-model"),
    ("recall", "--chat", "general", b"\xff"),
    ("recall", "--chat", "general", "x", "--author", b"\xff"),
    ("import", "somefile.jsonl", "--chat", b"\xff"),
    ("zoom", "--chat", "x" * 201, "1+1"),
    ("forget", "--guild", "99999999999999999999999", "--user", "1"),
    ("forget", "--guild", "dm", "--user", "99999999999999999999999"),
    ("sync-commands", "--guild", "99999999999999999999999"),
])  # fmt: skip
async def test_an_argument_that_cannot_be_stored_is_one_line_naming_it(
    tmp_path: Path, args: tuple[str | bytes, ...]
) -> None:
    done = await eva(tmp_path, *args, DATABASE_URL=UNREACHABLE_DB)
    option = next((a for a in args if isinstance(a, str) and a.startswith("--")), None)
    bad_position = "--author" if "--author" in args else ("--user" if "dm" in args else option)
    if args[0] == "recall" and "--author" not in args:
        bad_position = "words"
    line = one_clear_line(done, 2, f"eva {args[0]}:", str(bad_position))
    assert "usage:" not in line
    assert not (tmp_path / "data").exists()  # refused before any database was opened
