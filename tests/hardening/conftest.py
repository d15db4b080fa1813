"""Fixtures for the hardening tests: the bot fixtures of tests/bot/conftest.py (a
SimCord bot on the real services, Claude pointed at the fake Anthropic) with the hardening
world's four extensions and tiny memory sizes (tests/worlds/hardening_world.py), and a capture of
every log line the production logging configuration writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import simcord

from bot.settings import Settings
from tests.bot.conftest import (  # noqa: F401  (fixtures, re-exported for this folder)
    eva_bot,
    fake_anthropic,
    services,
    simcord_bot,
)
from tests.fakes.anthropic_api import FakeAnthropic
from tests.hardening.support import CapturedLogs, production_logs
from tests.worlds.hardening_world import EXTENSIONS, World, build_world, tiny_settings


@pytest.fixture
def all_logs() -> Iterator[CapturedLogs]:
    """Everything the bot's own logging setup (LOG_FORMAT=json) writes at LOG_LEVEL=DEBUG, the
    most a host can turn on: structlog events and every library's stdlib logging."""
    with production_logs("DEBUG") as logs:
        yield logs


@pytest.fixture
def eva_extensions() -> tuple[str, ...]:
    return EXTENSIONS


@pytest.fixture
def bot_settings(fake_anthropic: FakeAnthropic) -> Settings:  # noqa: F811  (the fixture above)
    return tiny_settings(fake_anthropic)


@pytest.fixture
async def world(simcord_env: simcord.Env, fake_anthropic: FakeAnthropic) -> World:  # noqa: F811
    return await build_world(simcord_env, fake_anthropic)
