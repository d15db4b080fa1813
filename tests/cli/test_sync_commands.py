"""`eva sync-commands` registers the slash commands with (the local fake of) Discord; a normal
bot start never calls the sync endpoint (it is rate limited, and commands change only with a
release)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import discord
import discord.gateway
import discord.http
import pytest

from bot.cli.parser import build_parser
from bot.cli.run import handlers
from bot.client import EvaBot
from bot.services import Services
from bot.settings import Settings
from tests.bot.conftest import bot_settings, fake_anthropic, services
from tests.fakes.discord_api import (
    FakeDiscord,
    discord_endpoints_kept,
    point_discord_at,
    restore_discord_endpoints,
)

# The bot's services for the in-process start below, as tests/bot/ builds them (this file
# tests the CLI, so it sits in tests/cli/, outside that folder's conftest).
__all__ = ["bot_settings", "fake_anthropic", "services"]

REPO = Path(__file__).resolve().parents[2]
EXPECTED = {"zoom", "recall", "forget-me", "remember-me", "export-me", "memory", "settings"}
MEMORY_SUBCOMMANDS = ["status", "view", "people", "node", "compact", "pause", "resume", "dashboard", "wipe"]
TIMEOUT_S = 10.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    with discord_endpoints_kept():
        async with FakeDiscord() as d:
            yield d


def fake_settings(fake: FakeDiscord) -> Settings:
    values = {"discord_token": "test-token", "discord_api_base": fake.api_base}
    return Settings(_env_file=None, **values)  # type: ignore[call-arg, arg-type]


def command_puts(fake: FakeDiscord) -> list[str]:
    return [r["path"] for r in fake.requests("PUT", "/applications/") if r["path"].endswith("/commands")]


async def test_sync_commands_registers_in_one_guild(
    fake: FakeDiscord, capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(["sync-commands", "--guild", str(fake.ids.guild)])
    settings = fake_settings(fake)
    assert await handlers()[args.command](args, settings) == 0
    assert command_puts(fake) == [f"/applications/{fake.ids.application}/guilds/{fake.ids.guild}/commands"]
    listed = fake.commands.listed(fake.ids.guild)
    assert {c["name"] for c in listed} == EXPECTED
    assert fake.commands.listed() == []  # nothing global
    memory = next(c for c in listed if c["name"] == "memory")
    assert [o["name"] for o in memory["options"]] == MEMORY_SUBCOMMANDS
    assert memory["default_member_permissions"] == str(discord.Permissions(manage_guild=True).value)
    printed = capsys.readouterr().out
    assert printed.startswith(f"registered 7 commands in server {fake.ids.guild}:")
    assert "/memory (status, view, people, node, compact, pause, resume, dashboard, wipe)" in printed
    assert discord.http.Route.BASE == "https://discord.com/api/v10"  # the CLI put it back


async def test_eva_sync_commands_as_a_process_registers_globally(fake: FakeDiscord, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DISCORD_TOKEN": "test-token",
        "DISCORD_API_BASE": fake.api_base,
        "DATABASE_URL": "",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "sync-commands",
        cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert out.decode().startswith("registered 7 commands globally:")
    assert command_puts(fake) == [f"/applications/{fake.ids.application}/commands"]
    listed = fake.commands.listed()
    assert {c["name"] for c in listed} == EXPECTED
    memory = next(c for c in listed if c["name"] == "memory")
    assert memory["contexts"] == [0] and memory["dm_permission"] is False  # guild only
    assert memory["default_member_permissions"] == "32"  # Manage Server by default
    settings = next(c for c in listed if c["name"] == "settings")
    assert settings["contexts"] == [0] and settings["dm_permission"] is False
    assert settings["default_member_permissions"] == "32"
    zoom = next(c for c in listed if c["name"] == "zoom")
    assert zoom.get("contexts") in (None, [0, 1]) and zoom["default_member_permissions"] is None


async def test_a_refused_guild_is_one_clear_line(fake: FakeDiscord) -> None:
    from bot.cli.sync_commands import sync_commands
    from bot.errors import CliError

    settings = fake_settings(fake)
    with pytest.raises(CliError):
        await sync_commands(settings, 4242)  # a server the bot is not in
    with pytest.raises(CliError, match="DISCORD_TOKEN is not set"):
        await sync_commands(Settings(_env_file=None), None)  # type: ignore[call-arg]
    assert fake.commands.listed() == []


async def test_a_normal_start_does_not_sync(fake: FakeDiscord, services: Services) -> None:
    bot = EvaBot(services, guild_ready_timeout=0.05)  # every extension, as `eva run` loads them
    ready = asyncio.Event()

    async def on_ready() -> None:
        ready.set()

    bot.add_listener(on_ready)
    previous = point_discord_at(fake.api_base, fake.gateway_url)
    runner = asyncio.create_task(bot.start("test-token"))
    try:
        await asyncio.wait_for(ready.wait(), TIMEOUT_S)
        assert set(bot.extensions) >= {"bot.commands.people", "bot.commands.admin"}
        assert {c.name for c in bot.tree.get_commands()} == EXPECTED  # served, not registered
        assert ("GET", "/users/@me") in [(r["method"], r["path"]) for r in fake.request_log]
        assert command_puts(fake) == []
        assert fake.commands.listed() == [] and fake.commands.listed(fake.ids.guild) == []
    finally:
        await bot.close()
        await asyncio.wait_for(runner, TIMEOUT_S)
        restore_discord_endpoints(previous)
