"""REST side of the fake Discord (everything discord.py sends to Route.BASE = .../api/v10).

Responses carry `Content-Type: application/json` exactly: discord.py's json_or_text compares the
header verbatim, and aiohttp's json_response would add "; charset=utf-8" (the body then arrives as a
str and login fails with "string indices must be integers"). Every request is appended to
world.request_log; unknown routes answer 404 JSON and are logged with "unmatched": True.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import BodyPartReader, web

from tests.fakes.discord_gateway import FakeGateway
from tests.fakes.discord_interactions import InteractionDesk
from tests.fakes.discord_messages import MessageDesk
from tests.fakes.discord_model import READ_MESSAGE_HISTORY, VIEW_CHANNEL, Json
from tests.fakes.discord_world import DiscordError, FakeWorld, UploadedFile, unknown

API_PREFIX = "/api/v10"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# Routes Discord authenticates by the token in the URL, not by the Authorization header.
TOKEN_IN_URL_PREFIXES = ("/webhooks/", "/interactions/")
LOG_ENTRY: web.RequestKey[Json] = web.RequestKey("log_entry", dict)


def json_reply(data: Any, status: int = 200) -> web.Response:
    return web.Response(
        status=status, body=json.dumps(data).encode(), headers={"Content-Type": "application/json"}
    )


def no_content() -> web.Response:
    return web.Response(status=204)


def snowflake_param(request: web.Request, name: str) -> int:
    value = request.match_info[name]
    if not value.isdigit():
        raise unknown(name.replace("_id", "").title(), 10000)
    return int(value)


async def read_payload(request: web.Request) -> tuple[Json, list[UploadedFile]]:
    """JSON body, or multipart with payload_json + files[n] (discord.py's upload format)."""
    body: Json = {}
    files: list[UploadedFile] = []
    if request.content_type == "multipart/form-data":
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "payload_json":
                body = json.loads(await part.text())
            elif part.filename:
                data = bytes(await part.read())
                files.append(UploadedFile(part.filename, data, part.headers.get("Content-Type")))
    elif request.body_exists:
        raw = await request.read()
        body = json.loads(raw) if raw else {}
    entry = request.get(LOG_ENTRY)
    if entry is not None:
        entry["json"] = body
        entry["files"] = [f.filename for f in files]
    return body, files


def make_api_middleware(world: FakeWorld, token: str | None) -> Any:
    @web.middleware
    async def api_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX):
            return await handler(request)
        path = request.path[len(API_PREFIX) :]
        entry: Json = {
            "method": request.method,
            "path": path,
            "query": dict(request.query),
            "json": None,
            "files": [],
            "status": None,
        }
        world.request_log.append(entry)
        request[LOG_ENTRY] = entry
        if request.content_type == "application/json" and request.body_exists:
            raw = await request.read()  # aiohttp caches the body, so handlers can read it again
            entry["json"] = json.loads(raw) if raw else None
        response: web.StreamResponse
        authorized = f"Bot {token}" == request.headers.get("Authorization")
        if token is not None and not authorized and not path.startswith(TOKEN_IN_URL_PREFIXES):
            response = json_reply({"message": "401: Unauthorized", "code": 0}, 401)
        else:
            try:
                response = await handler(request)
            except DiscordError as error:
                response = json_reply(error.body(), error.status)
            except (web.HTTPNotFound, web.HTTPMethodNotAllowed):
                entry["unmatched"] = True
                response = json_reply({"message": "404: Not Found", "code": 0}, 404)
        entry["status"] = response.status
        return response

    return api_middleware


def asked_for(request: web.Request, flag: str) -> bool:
    """A boolean query flag as Discord reads it (``?wait=true``, ``?with_response=1``)."""
    return request.query.get(flag, "").lower() in ("1", "true")


@dataclass
class FakeParts:
    """What the REST routes and the control routes (discord_control.py) both act on."""

    world: FakeWorld
    chat: MessageDesk
    interactions: InteractionDesk
    gateway: FakeGateway


class RestApi(FakeParts):
    def routes(self) -> list[web.RouteDef]:
        p = API_PREFIX
        return [
            web.get(f"{p}/users/@me", self.get_me),
            web.post(f"{p}/users/@me/channels", self.open_dm),
            web.get(f"{p}/users/{{user_id}}", self.get_user),
            web.get(f"{p}/oauth2/applications/@me", self.get_application),
            web.get(f"{p}/gateway", self.get_gateway),
            web.get(f"{p}/gateway/bot", self.get_gateway_bot),
            web.get(f"{p}/applications/{{app_id}}/commands", self.get_commands),
            web.put(f"{p}/applications/{{app_id}}/commands", self.put_commands),
            web.get(f"{p}/applications/{{app_id}}/guilds/{{guild_id}}/commands", self.get_commands),
            web.put(f"{p}/applications/{{app_id}}/guilds/{{guild_id}}/commands", self.put_commands),
            web.get(f"{p}/guilds/{{guild_id}}", self.get_guild),
            web.get(f"{p}/guilds/{{guild_id}}/channels", self.get_guild_channels),
            web.get(f"{p}/guilds/{{guild_id}}/members/{{user_id}}", self.get_member),
            web.get(f"{p}/guilds/{{guild_id}}/roles", self.get_roles),
            web.get(f"{p}/channels/{{channel_id}}", self.get_channel),
            web.post(f"{p}/channels/{{channel_id}}/typing", self.typing),
            web.post(f"{p}/channels/{{channel_id}}/messages/bulk-delete", self.bulk_delete),
            web.get(f"{p}/channels/{{channel_id}}/messages", self.history),
            web.post(f"{p}/channels/{{channel_id}}/messages", self.send_message),
            web.get(f"{p}/channels/{{channel_id}}/messages/{{message_id}}", self.get_message),
            web.patch(f"{p}/channels/{{channel_id}}/messages/{{message_id}}", self.edit_message),
            web.delete(f"{p}/channels/{{channel_id}}/messages/{{message_id}}", self.delete_message),
            web.post(f"{p}/interactions/{{interaction_id}}/{{token}}/callback", self.interaction_callback),
            web.post(f"{p}/webhooks/{{app_id}}/{{token}}", self.followup),
            web.get(f"{p}/webhooks/{{app_id}}/{{token}}/messages/{{message_id}}", self.get_webhook_message),
            web.patch(
                f"{p}/webhooks/{{app_id}}/{{token}}/messages/{{message_id}}", self.edit_webhook_message
            ),
            web.delete(
                f"{p}/webhooks/{{app_id}}/{{token}}/messages/{{message_id}}", self.delete_webhook_message
            ),
            web.get("/attachments/{channel_id}/{attachment_id}/{filename}", self.get_attachment),
        ]

    # ----- identity ----------------------------------------------------------------------------

    async def get_me(self, request: web.Request) -> web.Response:
        return json_reply({**self.world.bot.payload(), "verified": True, "mfa_enabled": False, "flags": 0})

    async def get_user(self, request: web.Request) -> web.Response:
        return json_reply(self.world.user(snowflake_param(request, "user_id")).payload())

    async def get_application(self, request: web.Request) -> web.Response:
        world = self.world
        return json_reply(
            {
                "id": str(world.application_id),
                "name": world.bot.username,
                "icon": None,
                "description": "",
                "summary": "",
                "rpc_origins": [],
                "bot_public": True,
                "bot_require_code_grant": False,
                "bot": world.bot.payload(),
                "owner": world.users[world.app_owner_id].payload(),
                "team": None,
                "verify_key": "0" * 64,
                "flags": world.application_flags(),
                "approximate_guild_count": len(world.guilds),
                "interactions_endpoint_url": None,
            }
        )

    async def get_gateway(self, request: web.Request) -> web.Response:
        return json_reply({"url": self.gateway.url})

    async def get_gateway_bot(self, request: web.Request) -> web.Response:
        return json_reply(
            {
                "url": self.gateway.url,
                "shards": self.gateway.shard_count,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 0,
                    "max_concurrency": 1,
                },
            }
        )

    async def open_dm(self, request: web.Request) -> web.Response:
        body, _ = await read_payload(request)
        channel = self.world.open_dm(int(body["recipient_id"]))
        return json_reply(self.world.channel_payload(channel))

    # ----- application commands ----------------------------------------------------------------

    def _command_scope(self, request: web.Request) -> tuple[int, int | None]:
        guild = request.match_info.get("guild_id")
        return snowflake_param(request, "app_id"), int(guild) if guild and guild.isdigit() else None

    async def get_commands(self, request: web.Request) -> web.Response:
        app_id, guild_id = self._command_scope(request)
        if app_id != self.world.application_id:
            raise unknown("Application", 10002)
        return json_reply(self.interactions.commands.listed(guild_id))

    async def put_commands(self, request: web.Request) -> web.Response:
        app_id, guild_id = self._command_scope(request)
        body = json.loads(await request.read() or b"[]")
        request[LOG_ENTRY]["json"] = body
        return json_reply(self.interactions.commands.put(app_id, body, guild_id))

    # ----- guilds and channels -----------------------------------------------------------------

    async def get_guild(self, request: web.Request) -> web.Response:
        guild = self.world.guild(snowflake_param(request, "guild_id"))
        full = self.world.guild_create_payload(guild)
        return json_reply({k: v for k, v in full.items() if k not in ("members", "channels", "threads")})

    async def get_guild_channels(self, request: web.Request) -> web.Response:
        guild = self.world.guild(snowflake_param(request, "guild_id"))
        channels = [self.world.channels[c] for c in guild.channel_ids]
        return json_reply([self.world.channel_payload(c) for c in channels if not c.is_thread])

    async def get_member(self, request: web.Request) -> web.Response:
        guild_id = snowflake_param(request, "guild_id")
        self.world.guild(guild_id)
        member = self.world.member_payload(guild_id, snowflake_param(request, "user_id"))
        if member is None:
            raise unknown("Member", 10007)
        return json_reply(member)

    async def get_roles(self, request: web.Request) -> web.Response:
        guild = self.world.guild(snowflake_param(request, "guild_id"))
        return json_reply([role.payload() for role in guild.roles.values()])

    async def get_channel(self, request: web.Request) -> web.Response:
        channel = self.world.channel(snowflake_param(request, "channel_id"))
        if (
            channel.guild_id is not None
            and not self.world.permissions(self.world.bot.id, channel) & VIEW_CHANNEL
        ):
            raise DiscordError(403, 50001, "Missing Access")  # Discord hides what the bot cannot see
        return json_reply(self.world.channel_payload(channel))

    async def typing(self, request: web.Request) -> web.Response:
        self.world.channel(snowflake_param(request, "channel_id"))
        return no_content()

    # ----- messages ----------------------------------------------------------------------------

    async def history(self, request: web.Request) -> web.Response:
        return json_reply(self.chat.bot_history(snowflake_param(request, "channel_id"), dict(request.query)))

    async def send_message(self, request: web.Request) -> web.Response:
        body, files = await read_payload(request)
        return json_reply(self.chat.bot_send(snowflake_param(request, "channel_id"), body, files))

    async def get_message(self, request: web.Request) -> web.Response:
        channel_id = snowflake_param(request, "channel_id")
        self.chat.require(self.world.channel(channel_id), READ_MESSAGE_HISTORY)
        return json_reply(self.world.message(snowflake_param(request, "message_id"), channel_id))

    async def edit_message(self, request: web.Request) -> web.Response:
        body, files = await read_payload(request)
        channel_id, message_id = (
            snowflake_param(request, "channel_id"),
            snowflake_param(request, "message_id"),
        )
        return json_reply(self.chat.bot_edit(channel_id, message_id, body, files))

    async def delete_message(self, request: web.Request) -> web.Response:
        self.chat.bot_delete(snowflake_param(request, "channel_id"), snowflake_param(request, "message_id"))
        return no_content()

    async def bulk_delete(self, request: web.Request) -> web.Response:
        body, _ = await read_payload(request)
        ids = [int(m) for m in body.get("messages", [])]
        self.chat.bot_bulk_delete(snowflake_param(request, "channel_id"), ids)
        return no_content()

    async def get_attachment(self, request: web.Request) -> web.Response:
        data = self.world.attachments.get(snowflake_param(request, "attachment_id"))
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    # ----- interactions and webhooks -----------------------------------------------------------

    async def interaction_callback(self, request: web.Request) -> web.Response:
        body, files = await read_payload(request)
        interaction_id = snowflake_param(request, "interaction_id")
        result = self.interactions.callback(interaction_id, request.match_info["token"], body, files)
        return json_reply(result) if asked_for(request, "with_response") else no_content()

    async def followup(self, request: web.Request) -> web.Response:
        body, files = await read_payload(request)
        app_id = snowflake_param(request, "app_id")
        message = self.interactions.followup(app_id, request.match_info["token"], body, files)
        return json_reply(message) if asked_for(request, "wait") else no_content()

    def _webhook_ref(self, request: web.Request) -> tuple[int, str, str]:
        return (
            snowflake_param(request, "app_id"),
            request.match_info["token"],
            request.match_info["message_id"],
        )

    async def get_webhook_message(self, request: web.Request) -> web.Response:
        return json_reply(self.interactions.get_message(*self._webhook_ref(request)))

    async def edit_webhook_message(self, request: web.Request) -> web.Response:
        body, files = await read_payload(request)
        return json_reply(self.interactions.edit_message(*self._webhook_ref(request), body, files))

    async def delete_webhook_message(self, request: web.Request) -> web.Response:
        self.interactions.delete_message(*self._webhook_ref(request))
        return no_content()
