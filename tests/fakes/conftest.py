"""Fixtures for the Anthropic fake's own tests: the fake on a manual clock (so the prompt
cache's 5-minute and 1-hour lifetimes pass only when a test says so) and the bare SDK, with
no retries, so every 4xx/5xx the fake returns reaches the test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import pytest

from memory.fakes.prompt_cache import ManualClock
from tests.fakes.anthropic_api import FakeAnthropic


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(clock=ManualClock()) as server:
        yield server


@pytest.fixture
async def client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    sdk = anthropic.AsyncAnthropic(api_key="test", base_url=fake.base_url, max_retries=0, timeout=5)
    yield sdk
    await sdk.close()
