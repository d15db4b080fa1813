"""`eva doctor`, through the real process against the Discord and Anthropic fakes and a real
PostgreSQL: one line per check, `ok` or the problem; tokens and models really checked; a
fresh database is information, not a failure. The verdicts themselves are pure functions,
tested first."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import discord
import pytest
from sqlalchemy import text

from bot.cli.doctor import Finding, intent_state, migration_finding
from memory.storage import migrate
from memory.storage.database import create_database, drop_database, make_engine, with_database
from tests.cli.support import eva
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord

TOKEN, KEY = "tok-right", "key-right"
HEAD = migrate.head_revision()


# --- pure verdicts -------------------------------------------------------------------------------


def test_migration_verdicts() -> None:
    known = {"0001", "0002"}
    assert migration_finding("0002", "0002", known) == Finding("database", True, "migrations current at 0002")
    fresh = migration_finding(None, "0002", known)
    assert fresh.ok and fresh.line() == "database: ok (not migrated yet: `eva run` will migrate)"
    behind = migration_finding("0001", "0002", known)
    assert not behind.ok and behind.line().startswith(
        "database: migrations behind: database at 0001, code at 0002"
    )
    unknown = migration_finding("0099", "0002", known)
    assert not unknown.ok and "0099" in unknown.detail and "does not know" in unknown.detail


def test_message_content_intent_is_either_flag() -> None:
    assert intent_state(discord.ApplicationFlags._from_value(1 << 18))  # verified app
    assert intent_state(discord.ApplicationFlags._from_value(1 << 19))  # under 100 servers, toggled on
    assert not intent_state(discord.ApplicationFlags._from_value((1 << 12) | (1 << 14) | (1 << 23)))


# --- the real process ------------------------------------------------------------------------------


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeDiscord, FakeAnthropic]]:
    async with FakeDiscord(token=TOKEN) as discord_fake, FakeAnthropic(api_keys={KEY}) as anthropic_fake:
        yield discord_fake, anthropic_fake


def pointing_at(
    fakes: tuple[FakeDiscord, FakeAnthropic], database_url: str, **overrides: str
) -> dict[str, str]:
    discord_fake, anthropic_fake = fakes
    return {
        "DISCORD_TOKEN": TOKEN, "DISCORD_API_BASE": discord_fake.api_base,
        "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anthropic_fake.base_url,
        "DATABASE_URL": database_url, **overrides,
    }  # fmt: skip


async def test_all_good_is_one_ok_line_per_check(
    tmp_path: Path, fakes: tuple[FakeDiscord, FakeAnthropic], database_url: str
) -> None:
    discord_fake, anthropic_fake = fakes
    discord_fake.world.add_guild("Second Guild", owner_id=discord_fake.ids.owner)
    done = await eva(tmp_path, "doctor", **pointing_at(fakes, database_url))
    assert (done.code, done.err) == (0, ""), done.lines
    assert done.lines == [
        "settings: ok",
        "discord: ok (logged in as Eva, Message Content intent on, in 2 servers)",
        "anthropic: ok (REPLY_MODEL claude-sonnet-5-5 available)",
        "anthropic: ok (COMPACT_MODEL claude-haiku-5-5 available)",
        f"database: ok (migrations current at {HEAD})",
    ]
    # The token and key were really used: one login, one model lookup per model.
    assert [r["path"] for r in discord_fake.requests("GET")] == ["/users/@me", "/oauth2/applications/@me"]
    assert sorted(e.path for e in anthropic_fake.log) == [
        "/v1/models/claude-haiku-5-5",
        "/v1/models/claude-sonnet-5-5",
    ]


async def test_bad_tokens_are_named_and_never_printed(
    tmp_path: Path, fakes: tuple[FakeDiscord, FakeAnthropic], database_url: str
) -> None:
    wrong = {"DISCORD_TOKEN": "tok-SECRET-wrong", "ANTHROPIC_API_KEY": "key-SECRET-wrong"}
    done = await eva(tmp_path, "doctor", **pointing_at(fakes, database_url, **wrong))
    assert done.code == 1
    assert "discord: Discord rejected DISCORD_TOKEN (reset the token in the Developer Portal)" in done.lines
    assert "anthropic: Anthropic rejected ANTHROPIC_API_KEY (create a new key in the console)" in done.lines
    assert len([line for line in done.lines if line.startswith("anthropic:")]) == 1  # not once per model
    assert "SECRET" not in done.out + done.err and "Traceback" not in done.err


async def test_message_content_intent_off_is_a_problem_the_gateway_agrees_with(
    tmp_path: Path, fakes: tuple[FakeDiscord, FakeAnthropic], database_url: str
) -> None:
    discord_fake, _ = fakes
    discord_fake.world.message_content_enabled = False
    done = await eva(tmp_path, "doctor", **pointing_at(fakes, database_url))
    assert done.code == 1
    (line,) = [line for line in done.lines if line.startswith("discord:")]
    assert "Message Content intent is off" in line and "Privileged Gateway Intents" in line
    # What doctor predicted is what `eva run` meets: the gateway refuses the intent (4014).
    run = await eva(
        tmp_path, "run", **pointing_at(fakes, database_url, DISCORD_GATEWAY_URL=discord_fake.gateway_url)
    )
    assert run.code == 2 and run.lines[-1].startswith("eva run: Discord refused the Message Content intent")


async def test_unknown_and_retired_models_are_named_with_their_setting(
    tmp_path: Path, fakes: tuple[FakeDiscord, FakeAnthropic], database_url: str
) -> None:
    _, anthropic_fake = fakes
    anthropic_fake.models.set_lifecycle("claude-haiku-4-5", "retired")
    # An alias (claude-haiku-4-5 -> its dated id) that the catalogue marks retired.
    wrong = {"REPLY_MODEL": "claude-sonnet-9-9", "COMPACT_MODEL": "claude-haiku-4-5"}
    done = await eva(tmp_path, "doctor", **pointing_at(fakes, database_url, **wrong))
    assert done.code == 1
    assert "anthropic: REPLY_MODEL claude-sonnet-9-9 is not a model the API knows" in done.lines
    assert "anthropic: COMPACT_MODEL claude-haiku-4-5 is retired: pick a current model" in done.lines
    assert (
        "settings: REPLY_MODEL claude-sonnet-9-9 has no price in PRICES: its calls would count as $0"
        in done.lines
    )


async def test_a_fresh_database_is_information_and_an_unknown_revision_a_problem(
    tmp_path: Path, fakes: tuple[FakeDiscord, FakeAnthropic], postgres_admin_url: str
) -> None:
    name = f"eva_doctor_{uuid.uuid4().hex[:8]}"
    await create_database(postgres_admin_url, name)
    url = with_database(postgres_admin_url, name)
    try:
        fresh = await eva(tmp_path, "doctor", **pointing_at(fakes, url))
        assert fresh.code == 0, fresh.lines
        assert fresh.lines[-1] == "database: ok (not migrated yet: `eva run` will migrate)"
        engine = make_engine(url)
        await migrate.upgrade(engine)
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = 'ffff99'"))
        await engine.dispose()
        ahead = await eva(tmp_path, "doctor", **pointing_at(fakes, url))
        assert ahead.code == 1
        assert ahead.lines[-1].startswith(
            "database: at revision ffff99, which this version of Eva does not know"
        )
    finally:
        await drop_database(postgres_admin_url, name)


async def test_unreachable_services_each_get_their_line(tmp_path: Path, database_url: str) -> None:
    done = await eva(tmp_path, "doctor", DISCORD_TOKEN="t", DISCORD_API_BASE="http://127.0.0.1:9/api/v10",
                     ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL="http://127.0.0.1:9", DATABASE_URL=database_url)  # fmt: skip
    assert done.code == 1 and done.seconds < 60
    assert "discord: cannot reach Discord at DISCORD_API_BASE (127.0.0.1:9): connection refused" in done.lines
    assert (
        "anthropic: cannot reach Anthropic at ANTHROPIC_BASE_URL (127.0.0.1:9): connection refused"
        in done.lines
    )
    assert f"database: ok (migrations current at {HEAD})" in done.lines
