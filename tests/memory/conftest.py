"""Fixtures for the memory tests that call the Anthropic fake: the fake on a manual clock and
the client as production makes it (`memory.claude.make_client`, two SDK retries)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import pytest

from memory.claude import make_client
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.conftest import fake  # noqa: F401  (the fixture: the fake on a manual clock)


@pytest.fixture
async def client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:  # noqa: F811
    sdk = make_client("test", fake.base_url, timeout=5.0, max_retries=2)
    yield sdk
    await sdk.close()
