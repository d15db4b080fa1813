"""The reply tests' fixtures, in one place: the fake Anthropic API, the settings (a test may
parametrize them indirectly), the SimCord bot wired with the real services (its extensions:
``world_extensions`` from tests/bot/conftest.py), and the world of tests/worlds/reply_world.py. A test module imports the ones it uses and names them in
``__all__`` (pytest finds fixtures in the module's namespace)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import simcord
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.client import EvaBot
from bot.settings import Settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.worlds.bot_world import make_bot
from tests.worlds.reply_world import World, build_world, make_services, make_settings


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
def settings(request: pytest.FixtureRequest, fake: FakeAnthropic) -> Settings:
    return make_settings(anthropic_base_url=fake.base_url, **getattr(request, "param", {}))


@pytest.fixture
def simcord_bot(
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
    fake: FakeAnthropic,
    settings: Settings,
    world_extensions: tuple[str, ...],
) -> EvaBot:
    return make_bot(make_services(engine, sessions, fake, settings), world_extensions)


@pytest.fixture
async def world(simcord_env: simcord.Env, fake: FakeAnthropic) -> World:
    return await build_world(simcord_env, fake)
