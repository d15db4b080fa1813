"""A local fake of Discord's gateway and REST API for whole-process tests of an unpatched discord.py bot.

In-process:
    async with FakeDiscord() as d:
        point_discord_at(d.api_base, d.gateway_url)   # the only patching discord.py needs
        bot = commands.Bot(..., guild_ready_timeout=0.05)
        ...  d.chat.post_user_message(d.ids.general, d.ids.alice, "hi")

As a process (a test driving `eva run` as a subprocess):
    python -m tests.fakes.discord_api --port 8765
prints one JSON line {"api_base", "gateway_url", "control_url", "ids"} and serves until killed;
the control surface under /_fake/... is described in tests/fakes/discord_control.py.

What a test touches (all synchronous; events reach the bot over the websocket right after):
    d.ids                 default world: guild, general/random channels, a thread, owner/admin/alice/bob
    d.world               users, guilds, channels, roles (add_*, give_role, delete_channel, remove_guild)
    d.chat                post_user_message / edit_user_message / delete_message / bulk_delete
    d.commands            registered application commands (listed(guild_id=None))
    d.interactions        create_command / click, and responses(interaction_id) as the bot answered
    d.requests(...)       the REST request log; d.gateway: drop_connections / request_reconnect

Module map: discord_model (snowflakes, entities, history paging), discord_world (guilds, channels,
event fan-out), discord_messages, discord_commands, discord_interactions, discord_gateway,
discord_rest, discord_control.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Iterator

import yarl
from aiohttp import web

from tests.fakes.discord_commands import CommandRegistry
from tests.fakes.discord_control import ControlApi, control_middleware
from tests.fakes.discord_gateway import CLOSE_RESUMABLE, DEFAULT_HEARTBEAT_MS, FakeGateway
from tests.fakes.discord_interactions import InteractionDesk
from tests.fakes.discord_messages import MessageDesk
from tests.fakes.discord_model import Json
from tests.fakes.discord_rest import API_PREFIX, RestApi, make_api_middleware
from tests.fakes.discord_world import DefaultIds, FakeWorld
from tests.fakes.serving import LocalServer, listening_arguments, serve_until_stopped

__all__ = [
    "FakeDiscord",
    "discord_endpoints_kept",
    "discord_on_fake",
    "point_discord_at",
    "restore_discord_endpoints",
]


def point_discord_at(api_base: str, gateway_url: str) -> tuple[str, yarl.URL]:
    """Repoint discord.py's REST base and default gateway; returns the previous values for restoring."""
    import discord.gateway
    import discord.http

    previous = (discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)
    discord.http.Route.BASE = api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)
    return previous


def restore_discord_endpoints(previous: tuple[str, yarl.URL]) -> None:
    import discord.gateway
    import discord.http

    discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = previous


@contextlib.contextmanager
def discord_endpoints_kept() -> Iterator[None]:
    """Asserts on the way out that discord.py's REST base and gateway are what they were."""
    import discord.gateway
    import discord.http

    def endpoints() -> tuple[str, yarl.URL]:
        return discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY

    before = endpoints()
    yield
    assert endpoints() == before, "discord.py is still pointed elsewhere"


@contextlib.asynccontextmanager
async def discord_on_fake() -> AsyncIterator[FakeDiscord]:
    """A FakeDiscord serving, with discord.py pointed at it until the block ends."""
    async with FakeDiscord() as fake:
        previous = point_discord_at(fake.api_base, fake.gateway_url)
        try:
            yield fake
        finally:
            restore_discord_endpoints(previous)


class FakeDiscord(LocalServer):
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        shard_count: int = 1,
        heartbeat_ms: int = DEFAULT_HEARTBEAT_MS,
    ) -> None:
        """token=None accepts any bot token; a string makes REST answer 401 and the gateway close 4004
        for any other token."""
        super().__init__(host, port)
        self.world = FakeWorld()
        self.chat = MessageDesk(self.world)
        self.commands = CommandRegistry(self.world)
        self.interactions = InteractionDesk(self.world, self.chat, self.commands)
        self.gateway = FakeGateway(
            self.world, token=token, shard_count=shard_count, heartbeat_ms=heartbeat_ms
        )
        # The world's own objects, never replaced (only appended to and cleared): read straight off the fake.
        self.ids: DefaultIds = self.world.ids
        self.request_log: list[Json] = self.world.request_log
        self._token = token

    # ----- addresses ---------------------------------------------------------------------------

    @property
    def api_base(self) -> str:
        return f"{self.base_url}{API_PREFIX}"

    @property
    def gateway_url(self) -> str:
        return f"ws://{self.host}:{self.port}/gateway"

    @property
    def control_url(self) -> str:
        return f"{self.base_url}/_fake"

    def requests(self, method: str | None = None, path_prefix: str = "") -> list[Json]:
        """Logged REST requests, optionally filtered (path relative to /api/v10, e.g. '/applications/')."""
        return [
            r
            for r in self.world.request_log
            if (method is None or r["method"] == method) and r["path"].startswith(path_prefix)
        ]

    # ----- lifecycle ---------------------------------------------------------------------------

    def build_app(self) -> web.Application:
        app = web.Application(middlewares=[make_api_middleware(self.world, self._token), control_middleware])
        app.router.add_get("/gateway", self.gateway.handle)
        app.router.add_routes(RestApi(self.world, self.chat, self.interactions, self.gateway).routes())
        app.router.add_routes(ControlApi(self.world, self.chat, self.interactions, self.gateway).routes())
        return app

    async def start(self) -> None:
        await self._listen(self.build_app(), handle_signals=False)
        self.world.cdn_base = self.base_url
        self.gateway.url = self.gateway_url

    async def stop(self) -> None:
        await self.gateway.close()
        await self._close()

    async def drop_connections(self, code: int = CLOSE_RESUMABLE) -> int:
        """Simulate a network drop; discord.py reconnects and RESUMEs (on_resumed)."""
        return await self.gateway.drop_connections(code)


def main(argv: list[str] | None = None) -> None:
    parser = listening_arguments(
        "Local fake Discord gateway + REST API for tests",
        default_port=0,
        port_help="0 picks a free port (printed on start)",
    )
    parser.add_argument("--token", default=None, help="require this bot token (default: accept any)")
    parser.add_argument("--shards", type=int, default=1, help="shard count reported by GET /gateway/bot")
    args = parser.parse_args(argv if argv is not None else sys.argv[1:])
    fake = FakeDiscord(host=args.host, port=args.port, token=args.token, shard_count=args.shards)

    def addresses() -> str:
        return json.dumps(
            {
                "api_base": fake.api_base,
                "gateway_url": fake.gateway_url,
                "control_url": fake.control_url,
                "ids": fake.ids.as_json(),
            }
        )

    asyncio.run(serve_until_stopped(fake, addresses))


if __name__ == "__main__":
    main()
