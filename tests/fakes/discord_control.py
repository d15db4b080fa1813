"""HTTP control surface (/_fake/...) so a test in another process can drive the fake Discord.

Ids travel as strings (snowflakes exceed 2**53). Errors come back as {"message", "code"} with the
status Discord would use, or 400 for malformed control requests.
"""

from __future__ import annotations

import base64
import json
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
        c = CONTROL_PREFIX
        return [
            web.get(f"{c}/state", self.state),
            web.post(f"{c}/users", self.add_user),
            web.post(f"{c}/guilds", self.add_guild),
            web.delete(f"{c}/guilds/{{guild_id}}", self.remove_guild),
            web.post(f"{c}/members", self.add_member),
            web.post(f"{c}/channels", self.add_channel),
            web.delete(f"{c}/channels/{{channel_id}}", self.delete_channel),
            web.post(f"{c}/dms", self.open_dm),
            web.get(f"{c}/channels/{{channel_id}}/messages", self.channel_messages),
            web.post(f"{c}/messages", self.post_message),
            web.get(f"{c}/messages/{{message_id}}", self.get_message),
            web.patch(f"{c}/messages/{{message_id}}", self.edit_message),
            web.delete(f"{c}/messages/{{message_id}}", self.delete_message),
            web.post(f"{c}/bulk-delete", self.bulk_delete),
            web.post(f"{c}/interactions/command", self.command),
            web.post(f"{c}/interactions/click", self.click),
            web.get(f"{c}/interactions", self.interaction_log),
            web.get(f"{c}/interactions/{{interaction_id}}", self.interaction_responses),
            web.get(f"{c}/commands", self.commands),
            web.get(f"{c}/requests", self.requests),
            web.delete(f"{c}/requests", self.clear_requests),
            web.get(f"{c}/gateway", self.sessions),
            web.post(f"{c}/gateway/drop", self.drop),
            web.post(f"{c}/gateway/reconnect", self.reconnect),
            web.post(f"{c}/gateway/invalidate", self.invalidate),
            web.post(f"{c}/gateway/down", self.go_down),
            web.post(f"{c}/gateway/up", self.come_back),
            web.post(f"{c}/guilds/{{guild_id}}/kick", self.kick_bot),
            web.post(f"{c}/guilds/{{guild_id}}/invite", self.invite_bot),
            web.post(f"{c}/guilds/{{guild_id}}/outage", self.start_outage),
            web.delete(f"{c}/guilds/{{guild_id}}/outage", self.end_outage),
        ]

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
        member = self.world.add_member(
            int(body["guild_id"]),
            int(body["user_id"]),
            admin=bool(body.get("admin", False)),
            role_ids=[int(r) for r in body.get("role_ids", [])],
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

    async def kick_bot(self, request: web.Request) -> web.Response:
        self.world.kick_bot(int(request.match_info["guild_id"]))
        return no_content()

    async def invite_bot(self, request: web.Request) -> web.Response:
        self.world.invite_bot(int(request.match_info["guild_id"]))
        return no_content()

    async def start_outage(self, request: web.Request) -> web.Response:
        self.world.start_outage(int(request.match_info["guild_id"]))
        return no_content()

    async def end_outage(self, request: web.Request) -> web.Response:
        self.world.end_outage(int(request.match_info["guild_id"]))
        return no_content()
