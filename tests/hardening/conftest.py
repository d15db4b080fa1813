"""Fixtures for the hardening tests: the bot fixtures of tests/bot/conftest.py (a
SimCord bot on the real services, Claude pointed at the fake Anthropic), and a capture of
every log line the production logging configuration writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.bot.conftest import (  # noqa: F401  (fixtures, re-exported for this folder)
    bot_settings,
    eva_bot,
    eva_extensions,
    fake_anthropic,
    services,
    simcord_bot,
)
from tests.hardening.support import CapturedLogs, production_logs


@pytest.fixture
def all_logs() -> Iterator[CapturedLogs]:
    """Everything the bot's own logging setup (LOG_FORMAT=json) writes at LOG_LEVEL=DEBUG, the
    most a host can turn on: structlog events and every library's stdlib logging."""
    with production_logs("DEBUG") as logs:
        yield logs
