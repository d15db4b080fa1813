"""The CLI's error boundary and strict settings, without a process: which exception becomes
which line and exit code, what argparse refuses, what Settings refuses. Every line is checked
for the setting it must name and for what it must never show (a password, a message)."""

from __future__ import annotations

import argparse
import asyncio
import json
import socket

import aiohttp
import discord
import pytest
from pydantic import ValidationError
from pydantic_settings import SettingsError

from bot.cli import admin as cli_admin
from bot.cli import main as cli
from bot.cli.args import chat_name, guild_or_dm, snowflake, text
from bot.cli.errors import explain, settings_line
from bot.cli.parser import build_parser
from bot.errors import CliError, ServiceUnreachable
from bot.settings import Settings
from memory.storage.database import database_location, database_reason
from tests.hardening.support import production_logs


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg, arg-type]


# --- strict settings -------------------------------------------------------------------------------


def test_an_unknown_log_level_is_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(ValidationError) as caught:
        settings(log_level="verbose")
    line = settings_line(caught.value)
    assert line.startswith("bad settings: LOG_LEVEL:")
    assert all(level in line for level in ("DEBUG", "INFO", "WARNING", "ERROR"))
    assert settings(log_level="debug").log_level == "DEBUG"


@pytest.mark.parametrize(
    "url",
    ["not-a-url", "mysql://u:pw-SECRET-1@h/db", "postgresql://u:pw-SECRET-1@h:notaport/db", "postgresql://h"],
)
def test_a_database_url_that_is_not_postgres_is_refused_without_echoing_it(url: str) -> None:
    with pytest.raises(ValidationError) as caught:
        settings(database_url=url)
    line = settings_line(caught.value)
    assert line.startswith("bad settings: DATABASE_URL:") and "postgresql://user:password@host" in line
    assert "SECRET" not in line and url not in line


@pytest.mark.parametrize("url", ["", "postgresql://x@127.0.0.1:1/db", "postgres://u:p@db:5432/eva",
                                 "postgresql://postgres@/eva?host=/tmp/sock"])  # fmt: skip
def test_postgres_urls_and_empty_are_accepted(url: str) -> None:
    assert settings(database_url=url).database_url is not None


def test_malformed_json_setting_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRICES", "{bad")
    with pytest.raises(SettingsError) as caught:
        Settings(_env_file=None)  # type: ignore[call-arg]
    failure = explain(caught.value, None)
    assert failure is not None and failure.exit_code == 2
    assert failure.line.startswith("bad settings: PRICES is not valid JSON")
    assert "\n" not in failure.line


# --- the mapping -----------------------------------------------------------------------------------


def connector_error(port: int) -> aiohttp.ClientConnectorError:
    key = aiohttp.client_reqrep.ConnectionKey("127.0.0.1", port, False, True, None, None, None)
    return aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "Connect call failed"))


class ClosedSocket:
    """What discord.ConnectionClosed reads from the websocket it was given."""

    def __init__(self, code: int) -> None:
        self.close_code = code


def test_each_known_failure_maps_to_its_line_and_code() -> None:
    s = settings(discord_api_base="http://127.0.0.1:9/api/v10", anthropic_base_url="http://127.0.0.1:7")
    cases = [
        (CliError("no such file: x"), 2, "no such file: x"),
        (
            ServiceUnreachable("cannot reach the database at DATABASE_URL (h:1/db): refused"),
            1,
            "DATABASE_URL",
        ),
        (discord.LoginFailure("Improper token has been passed."), 2, "DISCORD_TOKEN"),
        (connector_error(9), 1, "DISCORD_API_BASE (127.0.0.1:9): connection refused"),
        (discord.GatewayNotFound(), 1, "DISCORD_API_BASE"),
        (discord.ConnectionClosed(ClosedSocket(4004), shard_id=None), 2, "DISCORD_TOKEN"),
        (discord.ConnectionClosed(ClosedSocket(4009), shard_id=None), 1, "close code 4009"),
    ]
    for exc, code, named in cases:
        failure = explain(exc, s)
        assert failure is not None, exc
        assert failure.exit_code == code and named in failure.line, (exc, failure)
    assert explain(RuntimeError("a bug"), s) is None


def test_a_password_in_the_database_url_never_reaches_the_line() -> None:
    url = "postgresql://eva:pw-SECRET-9@db.example:6543/memories"
    assert database_location(url) == "db.example:6543/memories"
    assert database_location("postgresql://eva@/eva?host=/run/pg") == "/run/pg:5432/eva"


def test_reasons_come_from_the_innermost_cause() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connect call failed")
        except OSError as inner:
            raise RuntimeError("wrapped by the driver") from inner
    except RuntimeError as outer:
        assert database_reason(outer).startswith("connection refused")
    assert database_reason(socket.gaierror(-2, "Name or service not known")) == "host name not found"
    assert database_reason(TimeoutError()) == "no answer within 10 s"


# --- arguments ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["\udcff", "a\x00b", "", "   ", "x" * 201])
def test_chat_names_that_cannot_be_stored_are_refused(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        chat_name(value)


def test_chat_names_and_texts_that_can_be_stored_pass() -> None:
    assert chat_name("général 🎾") == "général 🎾"
    assert chat_name("x" * 200) == "x" * 200
    assert text("1+1") == "1+1"
    with pytest.raises(argparse.ArgumentTypeError):
        text("caf\udce9")


@pytest.mark.parametrize("value", ["99999999999999999999999", str(2**63), "0", "-5", "12a", "²", "١٢", ""])
def test_ids_outside_bigint_or_not_digits_are_refused(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        snowflake(value)
    with pytest.raises(argparse.ArgumentTypeError):
        guild_or_dm(value if value != "0" else "-0")


def test_ids_in_range_and_dm_pass() -> None:
    assert snowflake(str(2**63 - 1)) == 2**63 - 1
    assert guild_or_dm("dm") == "dm" and guild_or_dm("123") == "123"


def test_argparse_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["forget", "--guild", "99999999999999999999999", "--user", "1"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--guild" in err and "usage:" not in err


# --- the boundary in main() ------------------------------------------------------------------------


def secret_word() -> str:
    # Built at run time, so that no source line (shown in no traceback anyway) holds it.
    return "".join(["can", "ary", "-", "kumquat"])


@pytest.fixture
def broken_migrate(monkeypatch: pytest.MonkeyPatch) -> None:
    async def cmd_migrate(_args: argparse.Namespace, _settings: Settings) -> int:
        await asyncio.sleep(0)
        message_text = secret_word()
        raise RuntimeError(f"could not store {message_text!r}")

    monkeypatch.setattr(cli_admin, "cmd_migrate", cmd_migrate)
    for name in ("DATABASE_URL", "DISCORD_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_a_bug_is_one_line_without_its_message(
    broken_migrate: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOG_LEVEL", "INFO")
    with production_logs("INFO"):  # restores logging afterwards; main() reconfigures it
        code = cli.main(["migrate"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == [
        "eva migrate: unexpected RuntimeError; run with LOG_LEVEL=DEBUG to see where it happened"
    ]


@pytest.mark.parametrize("log_format", ["json", "console"])
def test_at_debug_a_bug_shows_where_it_happened_but_not_its_message(
    broken_migrate: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, log_format: str
) -> None:
    monkeypatch.setenv("LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("LOG_FORMAT", log_format)
    with production_logs("INFO"):
        code = cli.main(["migrate"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines()[-1].startswith("eva migrate: unexpected RuntimeError")
    assert secret_word() not in err
    if log_format == "json":
        events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
        (event,) = [e for e in events if e["event"] == "cli.failed"]
        (link,) = event["exception"]
        assert link["type"] == "RuntimeError"
        assert link["frames"][-1]["function"] == "cmd_migrate"
    else:
        assert "Traceback (most recent call last):" in err and ", in cmd_migrate" in err


def test_a_library_bug_while_handling_an_outage_reads_as_the_outage() -> None:
    s = settings(discord_gateway_url="ws://127.0.0.1:9/")
    try:
        try:
            raise connector_error(9)
        except aiohttp.ClientConnectorError:
            raise AttributeError("'NoneType' object has no attribute 'sequence'")  # noqa: B904  (as discord.py)
    except AttributeError as bug:
        failure = explain(bug, s)
    assert failure is not None and failure.exit_code == 1
    assert (
        failure.line
        == "cannot reach the Discord gateway at DISCORD_GATEWAY_URL (127.0.0.1:9): connection refused"
    )
    try:
        try:
            raise CliError("bad input")
        except CliError:
            raise AttributeError("'NoneType' object has no attribute 'sequence'") from None
    except AttributeError as bug:
        assert explain(bug, s) is None  # only an outage underneath is reported; a bug stays a bug
