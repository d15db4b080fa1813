"""The dashboard's world: the slash-command world (tests/worlds/commands_world.py: the guild
"friends" with ada the admin and a compacted #general) plus the reply extension, a second
guild where ada is an admin too (so only the session's binding keeps her out of its pages), a
DM chat with alice, and the dashboard itself served on a real port of 127.0.0.1 in the test's
event loop. Sign-in goes through the real `/memory dashboard` command; membership is checked
against discord.py's gateway cache, which SimCord keeps.
"""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta

import aiohttp
import pytest
import simcord

from bot.client import EvaBot
from bot.dashboard.web import Dashboard, serve
from bot.settings import Settings
from memory.storage.log import ChatKey, NewMessage
from tests.bot.conftest import make_bot_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.worlds.bot_world import admin_role
from tests.worlds.commands_world import EXTENSIONS as COMMAND_EXTENSIONS
from tests.worlds.commands_world import SMALL_MEMORY, START, World, build_world

EXTENSIONS = (*COMMAND_EXTENSIONS, "bot.reply.cog")
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/signin\?t=[A-Za-z0-9_-]+)")
HOSTILE = "<script>window.pwned = 1; document.title = 'pwned'</script> look <b>bold</b> & \"quoted\""
DM_SECRET = "the dm words nobody on a server page may read"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class DashboardWorld:
    world: World
    base: str  # http://127.0.0.1:port
    second: simcord.GuildHandle  # ada manages it too
    second_chat: int = 0
    dm_chat: int = 0
    hostile_chat: int = 0
    admins: dict[int, simcord.RoleHandle] = field(default_factory=dict)  # guild id -> admin role

    @property
    def guild_id(self) -> int:
        return self.world.guild.id

    async def link(self, actor: simcord.MemberActor | None = None, channel: object = None) -> str:
        """A sign-in link from the real `/memory dashboard`, as the member sees it."""
        who = actor or self.world.admin
        assert who is not None
        result = await who.slash(channel or self.world.general, "memory dashboard")
        assert result.response is not None and result.response.ephemeral, "the link is private"
        found = LINK.search(result.response.content)
        assert found, result.response.content
        return found.group(1)

    async def sign_in(self, http: aiohttp.ClientSession, link: str) -> aiohttp.ClientResponse:
        """Open the link and press its button, as a browser does; the answer, not followed."""
        async with http.get(link) as shown:
            assert shown.status == 200
        secret = link.split("t=", 1)[1]
        return await http.post(f"{self.base}/signin", data={"t": secret}, allow_redirects=False)

    def take_manage_server(self) -> None:
        """ada loses the admin role in the first guild (an update through the gateway)."""
        env, admin = self.world.env, self.world.admin
        assert admin is not None
        env.backend.remove_member_role(self.guild_id, admin.id, self.admins[self.guild_id].id)


@pytest.fixture
def eva_extensions() -> tuple[str, ...]:
    return EXTENSIONS


@pytest.fixture
def dashboard_port() -> int:
    return free_port()


@pytest.fixture
def bot_settings(fake_anthropic: FakeAnthropic, dashboard_port: int) -> Settings:
    return make_bot_settings(
        fake_anthropic, **SMALL_MEMORY, dashboard_port=dashboard_port, debounce_seconds=0.0
    )


async def seed_more(dw: DashboardWorld) -> None:
    world = dw.world
    engine = world.engine
    dw.second_chat = await engine.ensure_chat(
        ChatKey("text", "second-general", discord_id=dw.second.channels["general"].id, guild_id=dw.second.id)
    )
    await engine.append_many(
        dw.second_chat,
        [
            NewMessage(
                "bob", START, "only the second server knows this", author_id=world.bob.id, snowflake=90_001
            )
        ],
    )
    dw.dm_chat = await engine.ensure_chat(
        ChatKey("dm", "alice-dm", discord_id=777_001, recipient_id=world.alice.id)
    )
    await engine.append_many(
        dw.dm_chat, [NewMessage("alice", START, DM_SECRET, author_id=world.alice.id, snowflake=90_002)]
    )
    hostile = world.guild.create_text_channel("hostile")
    dw.hostile_chat = await engine.ensure_chat(
        ChatKey("text", "hostile", discord_id=hostile.id, guild_id=world.guild.id)
    )
    await engine.append_many(
        dw.hostile_chat,
        [
            NewMessage(
                "mallory", START + timedelta(minutes=k), HOSTILE, author_id=world.bob.id, snowflake=91_000 + k
            )
            for k in range(3)
        ],
    )


@pytest.fixture
async def dash(simcord_env: simcord.Env, dashboard_port: int) -> AsyncIterator[DashboardWorld]:
    world = await build_world(simcord_env)
    bot = simcord_env.bot
    assert isinstance(bot, EvaBot) and world.admin is not None
    second = simcord_env.create_guild("second")
    second.create_text_channel("general")
    second_admins = admin_role(second)
    second.add_member(world.admin.user, roles=[second_admins])
    dw = DashboardWorld(world, f"http://127.0.0.1:{dashboard_port}", second)
    dw.admins = {world.guild.id: world.guild.roles["admins"], second.id: second_admins}
    await seed_more(dw)
    runner = await serve(Dashboard(world.services, bot).app(), "127.0.0.1", dashboard_port)
    try:
        yield dw
    finally:
        await runner.cleanup()
