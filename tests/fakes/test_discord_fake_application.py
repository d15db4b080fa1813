"""The fake Discord's application as `eva doctor` and the gateway see it, through unpatched
discord.py: the flags carry the Message Content intent when the portal switch is on, the
approximate guild count follows the world, and with the switch off the gateway refuses an
IDENTIFY that asks for the intent (4014, PrivilegedIntentsRequired), as Discord does."""

from __future__ import annotations

from collections.abc import AsyncIterator

import discord
import pytest

from tests.fakes.discord_api import FakeDiscord, discord_on_fake
from tests.fakes.discord_world import APP_FLAG_MESSAGE_CONTENT_LIMITED


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with discord_on_fake() as d:
        yield d


def client(message_content: bool) -> discord.Client:
    intents = discord.Intents(guilds=True, guild_messages=True, message_content=message_content)
    return discord.Client(intents=intents)


async def test_application_flags_and_guild_count(fake: FakeDiscord) -> None:
    fake.world.add_guild("Another", owner_id=fake.ids.owner)
    async with client(True) as bot:
        await bot.login("any-token")
        app = await bot.application_info()
        assert app.flags.gateway_message_content_limited and not app.flags.gateway_message_content
        assert app.approximate_guild_count == 2
        fake.world.message_content_enabled = False
        app = await bot.application_info()
        assert not app.flags.gateway_message_content_limited and app.flags.value == 0
    assert (
        discord.ApplicationFlags(gateway_message_content_limited=True).value
        == APP_FLAG_MESSAGE_CONTENT_LIMITED
    )


async def test_a_disabled_intent_is_refused_by_the_gateway_with_4014(fake: FakeDiscord) -> None:
    fake.world.message_content_enabled = False
    bot = client(True)
    with pytest.raises(discord.PrivilegedIntentsRequired):
        async with bot:
            await bot.start("any-token")


async def test_without_asking_for_the_intent_the_gateway_still_accepts(fake: FakeDiscord) -> None:
    fake.world.message_content_enabled = False
    bot = client(False)
    async with bot:
        await bot.login("any-token")
        ready = bot.loop.create_task(bot.connect(reconnect=False))
        await bot.wait_until_ready()
        assert bot.is_ready() and bot.application_flags.value == 0
        await bot.close()
        await ready


async def test_the_members_intent_is_refused_with_4014_when_its_switch_is_off(fake: FakeDiscord) -> None:
    fake.world.server_members_enabled = False
    intents = discord.Intents.default()
    intents.members = True
    bot = discord.Client(intents=intents)
    with pytest.raises(discord.PrivilegedIntentsRequired):
        async with bot:
            await bot.start("any-token")
