"""HTTP control surface (/_fake/...) so a test in another process can drive the fake Discord.

Ids travel as strings (snowflakes exceed 2**53). Errors come back as {"message", "code"} with the
status Discord would use, or 400 for malformed control requests.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from aiohttp import web

from tests.fakes.discord_gateway import CLOSE_RESUMABLE
from tests.fakes.discord_model import Json
from tests.fakes.discord_rest import FakeParts, Handler, json_reply, no_content
from tests.fakes.discord_world import DiscordError, UploadedFile

CONTROL_PREFIX = "/_fake"


@web.middleware
async def control_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.path.startswith(CONTROL_PREFIX):
        return await handler(request)
    try:
        return await handler(request)
    except DiscordError as error:
        return json_reply(error.body(), error.status)
    except (KeyError, ValueError, TypeError) as error:
        return json_reply({"message": f"bad control request: {error!r}", "code": 0}, 400)


def _uploads(items: list[Json]) -> list[UploadedFile]:
    """Attachments as {filename, content_type?, text? | base64?, size?} (size pads with zero bytes)."""
    files = []
    for item in items:
        if "base64" in item:
            data = base64.b64decode(item["base64"])
        elif "text" in item:
            data = str(item["text"]).encode()
        else:
            data = bytes(int(item.get("size", 0)))
        files.append(UploadedFile(item["filename"], data, item.get("content_type")))
    return files


class ControlApi(FakeParts):
    def routes(self) -> list[web.RouteDef]:
        table: list[tuple[str, str, Handler]] = [
            ("GET", "/state", self.state),
            ("POST", "/users", self.add_user),
            ("POST", "/guilds", self.add_guild),
            ("DELETE", "/guilds/{guild_id}", self.remove_guild),
            ("POST", "/members", self.add_member),
            ("POST", "/channels", self.add_channel),
            ("DELETE", "/channels/{channel_id}", self.delete_channel),
            ("POST", "/dms", self.open_dm),
            ("GET", "/channels/{channel_id}/messages", self.channel_messages),
            ("POST", "/messages", self.post_message),
            ("GET", "/messages/{message_id}", self.get_message),
            ("PATCH", "/messages/{message_id}", self.edit_message),
            ("DELETE", "/messages/{message_id}", self.delete_message),
            ("POST", "/bulk-delete", self.bulk_delete),
            ("POST", "/interactions/command", self.command),
            ("POST", "/interactions/click", self.click),
            ("GET", "/interactions", self.interaction_log),
            ("GET", "/interactions/{interaction_id}", self.interaction_responses),
            ("GET", "/commands", self.commands),
            ("GET", "/requests", self.requests),
            ("DELETE", "/requests", self.clear_requests),
            ("GET", "/gateway", self.sessions),
            ("POST", "/gateway/drop", self.drop),
            ("POST", "/gateway/reconnect", self.reconnect),
            ("POST", "/gateway/invalidate", self.invalidate),
            ("POST", "/gateway/down", self.go_down),
            ("POST", "/gateway/up", self.come_back),
            ("POST", "/guilds/{guild_id}/kick", self.on_guild(self.world.kick_bot)),
            ("POST", "/guilds/{guild_id}/invite", self.on_guild(self.world.invite_bot)),
            ("POST", "/guilds/{guild_id}/outage", self.on_guild(self.world.start_outage)),
            ("DELETE", "/guilds/{guild_id}/outage", self.on_guild(self.world.end_outage)),
        ]
        return [web.route(method, CONTROL_PREFIX + path, handler) for method, path, handler in table]

    def on_guild(self, action: Callable[[int], None]) -> Handler:
        """A handler that applies ``action`` to the path's guild, then answers 204."""

        async def handle(request: web.Request) -> web.Response:
            action(int(request.match_info["guild_id"]))
            return no_content()

        return handle

    @staticmethod
    async def _body(request: web.Request) -> Json:
        raw = await request.read()
        data: Any = json.loads(raw) if raw else {}
        if not isinstance(data, dict):
            raise ValueError("control bodies are JSON objects")
        return data

    # ----- world -------------------------------------------------------------------------------

    async def state(self, request: web.Request) -> web.Response:
        world = self.world
        guilds = []
        for guild in world.guilds.values():
            guilds.append(
                {
                    "id": str(guild.id),
                    "name": guild.name,
                    "owner_id": str(guild.owner_id),
                    "roles": [r.payload() for r in guild.roles.values()],
                    "members": [m.payload() for m in guild.members.values()],
                    "channels": [world.channel_payload(world.channels[c]) for c in guild.channel_ids],
                }
            )
        return json_reply(
            {
                "ids": world.ids.as_json(),
                "users": [u.payload() for u in world.users.values()],
                "guilds": guilds,
                "gateway_url": self.gateway.url,
                "sessions": self.gateway.describe(),
            }
        )

    async def add_user(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        return json_reply(self.world.add_user(body["username"], bot=bool(body.get("bot", False))).payload())

    async def add_guild(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        owner = int(body["owner_id"]) if body.get("owner_id") else None
        guild = self.world.add_guild(body.get("name", "Another Guild"), owner_id=owner)
        return json_reply(self.world.guild_create_payload(guild))

    async def remove_guild(self, request: web.Request) -> web.Response:
        self.world.remove_guild(int(request.match_info["guild_id"]))
        return no_content()

    async def add_member(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        admin, role_ids = bool(body.get("admin", False)), [int(r) for r in body.get("role_ids", [])]
        member = self.world.add_member(
            int(body["guild_id"]), int(body["user_id"]), admin=admin, role_ids=role_ids
        )
        return json_reply(member.payload())

    async def add_channel(self, request: web.Request) -> web.Response:
        """{guild_id, name, overwrites?} makes a text channel; {parent_id, name, owner_id} a thread."""
        body = await self._body(request)
        if body.get("parent_id"):
            channel = self.world.add_thread(
                int(body["parent_id"]), body["name"], owner_id=int(body["owner_id"])
            )
        else:
            channel = self.world.add_text_channel(
                int(body["guild_id"]), body["name"], overwrites=body.get("overwrites")
            )
        return json_reply(self.world.channel_payload(channel))

    async def delete_channel(self, request: web.Request) -> web.Response:
        return json_reply(self.world.delete_channel(int(request.match_info["channel_id"])))

    async def open_dm(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        return json_reply(self.world.channel_payload(self.world.open_dm(int(body["user_id"]))))

    # ----- messages ----------------------------------------------------------------------------

    async def channel_messages(self, request: web.Request) -> web.Response:
        channel_id = int(request.match_info["channel_id"])
        self.world.channel(channel_id)
        return json_reply(self.world.channel_messages(channel_id))

    async def post_message(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        message = self.chat.post_user_message(
            int(body["channel_id"]),
            int(body["author_id"]),
            body.get("content", ""),
            attachments=_uploads(body.get("attachments", [])),
            embeds=body.get("embeds", []),
            sticker_items=body.get("sticker_items", []),
            reply_to=int(body["reply_to"]) if body.get("reply_to") else None,
            when=datetime.fromisoformat(body["timestamp"]) if body.get("timestamp") else None,
            announce=bool(body.get("announce", True)),
        )
        return json_reply(message)

    async def get_message(self, request: web.Request) -> web.Response:
        return json_reply(self.world.message(int(request.match_info["message_id"])))

    async def edit_message(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        return json_reply(self.chat.edit_user_message(int(request.match_info["message_id"]), body["content"]))

    async def delete_message(self, request: web.Request) -> web.Response:
        self.chat.delete_message(int(request.match_info["message_id"]))
        return no_content()

    async def bulk_delete(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        self.chat.bulk_delete(int(body["channel_id"]), [int(m) for m in body["message_ids"]])
        return no_content()

    # ----- interactions ------------------------------------------------------------------------

    async def command(self, request: web.Request) -> web.Response:
        """{user_id, channel_id, command: "name [group] [sub]", options: {name: value}, focused?}."""
        body = await self._body(request)
        payload = self.interactions.create_command(
            int(body["user_id"]),
            int(body["channel_id"]),
            body["command"],
            body.get("options"),
            focused=body.get("focused"),
        )
        return json_reply(payload)

    async def click(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        payload = self.interactions.click(
            int(body["user_id"]), int(body["message_id"]), body["custom_id"], body.get("values")
        )
        return json_reply(payload)

    async def interaction_log(self, request: web.Request) -> web.Response:
        return json_reply(self.interactions.log)

    async def interaction_responses(self, request: web.Request) -> web.Response:
        return json_reply(self.interactions.responses(int(request.match_info["interaction_id"])))

    async def commands(self, request: web.Request) -> web.Response:
        guild = request.query.get("guild_id")
        return json_reply(self.interactions.commands.listed(int(guild) if guild else None))

    async def requests(self, request: web.Request) -> web.Response:
        return json_reply(self.world.request_log)

    async def clear_requests(self, request: web.Request) -> web.Response:
        self.world.request_log.clear()
        return no_content()

    # ----- gateway -----------------------------------------------------------------------------

    async def sessions(self, request: web.Request) -> web.Response:
        return json_reply({"sessions": self.gateway.describe(), "connections": self.gateway.connections})

    async def drop(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        dropped = await self.gateway.drop_connections(int(body.get("code", CLOSE_RESUMABLE)))
        return json_reply({"dropped": dropped})

    async def reconnect(self, request: web.Request) -> web.Response:
        return json_reply({"sessions": self.gateway.request_reconnect()})

    async def invalidate(self, request: web.Request) -> web.Response:
        return json_reply({"sessions": self.gateway.invalidate_sessions()})

    async def go_down(self, request: web.Request) -> web.Response:
        await self.gateway.go_down()
        return no_content()

    async def come_back(self, request: web.Request) -> web.Response:
        self.gateway.come_back()
        return no_content()
