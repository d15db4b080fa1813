"""Fixtures for bot tests: a SimCord bot wired with the real services (composition root's
`build_services`) on the test database, with the Claude client pointed at the fake Anthropic.

Reuse: request ``services`` for the services alone, ``eva_bot`` for the bot, ``room`` for a
guild with a "general" channel; override
``eva_extensions`` (the extensions to load) or ``bot_settings`` in a test module to change
them. ``simcord_bot`` is ``eva_bot``, so ``simcord_env`` runs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NamedTuple

import pytest
import simcord
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.app import build_services
from bot.client import EvaBot
from bot.database import Database
from bot.gateway.ingest import Ingest
from bot.gateway.running import ingest_of as running_ingest
from bot.services import Services
from bot.settings import Settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.worlds.reply_world import EXTENSIONS as REPLY_EXTENSIONS


def make_bot_settings(fake_anthropic: FakeAnthropic, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "discord_token": "test-token",
        "anthropic_api_key": "test-key",
        "anthropic_base_url": fake_anthropic.base_url,
        "anthropic_timeout": 10.0,
        **overrides,
    }
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture(scope="session")
async def fake_anthropic() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def bot_settings(fake_anthropic: FakeAnthropic) -> Settings:
    return make_bot_settings(fake_anthropic)


@pytest.fixture
async def services(
    bot_settings: Settings,
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
    fake_anthropic: FakeAnthropic,
) -> AsyncIterator[Services]:
    """Services from the composition root on clean tables of the test database."""
    fake_anthropic.reset()
    built = build_services(bot_settings, Database(engine=engine, sessions=sessions, embedded=None))
    yield built
    await built.claude.close()


@pytest.fixture
def eva_extensions() -> tuple[str, ...]:
    return ("bot.gateway.cog",)


@pytest.fixture
def world_extensions() -> tuple[str, ...]:
    """The extensions of the reply world's bot (tests/worlds/reply_fixtures.py); a module may override it."""
    return REPLY_EXTENSIONS


@pytest.fixture
def eva_bot(services: Services, eva_extensions: tuple[str, ...]) -> EvaBot:
    return EvaBot(services, extensions=eva_extensions)


@pytest.fixture
def simcord_bot(eva_bot: EvaBot) -> EvaBot:
    return eva_bot


class Room(NamedTuple):
    """A guild with one text channel, "general", in SimCord's running env; people join with
    ``member`` (a test unpacks ``env, guild, general = room``)."""

    env: simcord.Env
    guild: simcord.GuildHandle
    general: simcord.ChannelHandle

    def member(self, name: str, **user: Any) -> simcord.MemberActor:
        return self.guild.add_member(self.env.create_user(name, **user))

    def people(self, *names: str) -> list[simcord.MemberActor]:
        return [self.member(name) for name in names]


@pytest.fixture
def room(simcord_env: simcord.Env) -> Room:
    guild = simcord_env.create_guild()
    return Room(simcord_env, guild, guild.create_text_channel("general"))


def ingest_of(bot: EvaBot) -> Ingest:
    ingest = running_ingest(bot)
    assert isinstance(ingest, Ingest)
    return ingest


def declared_retry_wait(env: simcord.Env) -> Callable[[float], Awaitable[None]]:
    """Ingest's retry pause as a SimCord external wait: a bot whose database is down settles
    (its writer is parked) and resumes only when the test calls ``env.advance_time``."""

    async def wait(seconds: float) -> None:
        await env.external_wait(asyncio.sleep(seconds), reason="database unavailable")

    return wait
