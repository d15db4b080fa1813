"""Messages in the fake Discord: what humans post (control side) and what the bot sends (REST side).

Both paths store the message and announce MESSAGE_CREATE/UPDATE/DELETE through the world's
dispatcher, as Discord echoes a bot's own messages back to it over the gateway.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from tests.fakes.discord_model import (
    MANAGE_MESSAGES,
    READ_MESSAGE_HISTORY,
    SEND_MESSAGES,
    SEND_MESSAGES_IN_THREADS,
    VIEW_CHANNEL,
    FakeChannel,
    FakeUser,
    Json,
    iso_time,
)
from tests.fakes.discord_world import DiscordError, FakeWorld, UploadedFile

MAX_CONTENT_CHARS = 2000
# Discord refuses bulk deletes of messages older than 14 days (error 50034).
BULK_DELETE_MAX_AGE_S = 14 * 24 * 3600
USER_MENTION = re.compile(r"<@!?(\d+)>")
ROLE_MENTION = re.compile(r"<@&(\d+)>")
MESSAGE_TYPE_DEFAULT = 0
MESSAGE_TYPE_REPLY = 19
FLAG_EPHEMERAL = 1 << 6
FLAG_LOADING = 1 << 7


def too_long_error(field_path: Sequence[str]) -> DiscordError:
    """The 400 Discord returns for content over 2000 characters (Invalid Form Body, 50035)."""
    leaf: Json = {
        "_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]
    }
    for name in reversed(field_path):
        leaf = {name: leaf}
    return DiscordError(400, 50035, "Invalid Form Body", leaf)


class MessageDesk:
    """Message operations over one FakeWorld (its MessageStore holds the data)."""

    def __init__(self, world: FakeWorld) -> None:
        self.world = world
        self.store = world.messages

    def build_message(
        self,
        channel: FakeChannel,
        author: FakeUser,
        body: Json,
        *,
        attachments: Sequence[Json] = (),
        message_id: int | None = None,
        extra: Json | None = None,
    ) -> Json:
        """A REST-shaped message from a create body (content, embeds, components, flags, reference, ...)."""
        content = body.get("content") or ""
        new_id = message_id or self.world.snowflakes.next()
        message: Json = {
            "id": str(new_id),
            "channel_id": str(channel.id),
            "author": author.payload(),
            "content": content,
            "timestamp": iso_time(new_id),
            "edited_timestamp": None,
            "tts": bool(body.get("tts", False)),
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": list(attachments),
            "embeds": list(body.get("embeds") or []),
            "sticker_items": list(body.get("sticker_items") or []),
            "components": list(body.get("components") or []),
            "pinned": False,
            "type": MESSAGE_TYPE_DEFAULT,
            "flags": int(body.get("flags") or 0),
        }
        if body.get("nonce") is not None:
            message["nonce"] = body["nonce"]
        reference = body.get("message_reference")
        replied_author: Json | None = None
        if reference:
            referenced = self.store.get(int(reference["message_id"]))
            if referenced is None and reference.get("fail_if_not_exists", True):
                raise DiscordError(
                    400,
                    50035,
                    "Invalid Form Body",
                    {
                        "message_reference": {
                            "_errors": [
                                {"code": "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "message": "Unknown message"}
                            ]
                        }
                    },
                )
            if referenced is not None:
                message["type"] = MESSAGE_TYPE_REPLY
                message["message_reference"] = {
                    "type": 0,
                    "message_id": referenced["id"],
                    "channel_id": referenced["channel_id"],
                    **({"guild_id": str(channel.guild_id)} if channel.guild_id else {}),
                }
                message["referenced_message"] = {
                    k: v for k, v in referenced.items() if k != "referenced_message"
                }
                replied_author = referenced["author"]
        self._apply_mentions(message, channel, body.get("allowed_mentions"), replied_author)
        message.update(extra or {})
        return message

    def _apply_mentions(
        self, message: Json, channel: FakeChannel, allowed: Json | None, replied_author: Json | None
    ) -> None:
        """Mentions Discord derives from content, filtered by allowed_mentions (absent = everything)."""
        content = message["content"]
        parse = set(allowed.get("parse", [])) if allowed is not None else {"users", "roles", "everyone"}
        explicit_users = {int(u) for u in (allowed or {}).get("users", [])}
        reply_ping = allowed.get("replied_user", False) if allowed is not None else True
        user_ids = [int(x) for x in USER_MENTION.findall(content)]
        mentioned = [u for u in dict.fromkeys(user_ids) if "users" in parse or u in explicit_users]
        if replied_author is not None and reply_ping and int(replied_author["id"]) not in mentioned:
            mentioned.append(int(replied_author["id"]))
        message["mentions"] = [self.world.users[u].payload() for u in mentioned if u in self.world.users]
        if channel.guild_id is not None:
            roles = self.world.guilds[channel.guild_id].roles
            message["mention_roles"] = [
                r for r in ROLE_MENTION.findall(content) if int(r) in roles and "roles" in parse
            ]
        message["mention_everyone"] = "everyone" in parse and ("@everyone" in content or "@here" in content)

    def store_and_announce(self, message: Json, *, ephemeral: bool = False) -> Json:
        self.store.add(message, ephemeral=ephemeral)
        if not ephemeral:
            self.world.announce("MESSAGE_CREATE", self.world.gateway_message(message))
        return message

    def make_attachments(self, channel_id: int, files: Sequence[UploadedFile]) -> list[Json]:
        result = []
        for upload in files:
            attachment_id = self.world.snowflakes.next()
            self.world.attachments[attachment_id] = upload.data
            url = f"{self.world.cdn_base}/attachments/{channel_id}/{attachment_id}/{upload.filename}"
            result.append(
                {
                    "id": str(attachment_id),
                    "filename": upload.filename,
                    "size": len(upload.data),
                    "url": url,
                    "proxy_url": url,
                    "content_type": upload.content_type,
                }
            )
        return result

    def post_user_message(
        self,
        channel_id: int,
        author_id: int,
        content: str = "",
        *,
        attachments: Sequence[UploadedFile] = (),
        embeds: Sequence[Json] = (),
        sticker_items: Sequence[Json] = (),
        reply_to: int | None = None,
        when: datetime | None = None,
        announce: bool = True,
    ) -> Json:
        """A human writes in a channel. `when` backdates the id; announce=False seeds history silently."""
        channel = self.world.channel(channel_id)
        body: Json = {"content": content, "embeds": list(embeds), "sticker_items": list(sticker_items)}
        if reply_to is not None:
            body["message_reference"] = {"message_id": reply_to}
        message_id = self.world.snowflakes.at(when) if when else None
        message = self.build_message(
            channel,
            self.world.user(author_id),
            body,
            attachments=self.make_attachments(channel_id, attachments),
            message_id=message_id,
        )
        if announce:
            return self.store_and_announce(message)
        self.store.add(message)
        return message

    def edit_user_message(self, message_id: int, content: str) -> Json:
        message = self.world.message(message_id)
        message["content"] = content
        message["edited_timestamp"] = datetime.now(UTC).isoformat()
        # Discord derives the mentions of the new content again (an edit can add or drop some).
        replied = message.get("referenced_message") or None
        channel = self.world.channels[int(message["channel_id"])]
        self._apply_mentions(message, channel, None, replied["author"] if replied else None)
        self.world.announce("MESSAGE_UPDATE", self.world.gateway_message(message))
        return message

    def delete_message(self, message_id: int) -> None:
        message = self.world.message(message_id)
        ephemeral = self.store.is_ephemeral(message_id)
        self.store.remove(message_id)
        if ephemeral:
            return
        channel = self.world.channels[int(message["channel_id"])]
        data: Json = {"id": str(message_id), "channel_id": str(channel.id)}
        if channel.guild_id is not None:
            data["guild_id"] = str(channel.guild_id)
        self.world.announce("MESSAGE_DELETE", data)

    def bulk_delete(self, channel_id: int, message_ids: Sequence[int]) -> None:
        channel = self.world.channel(channel_id)
        for message_id in message_ids:
            self.world.message(message_id, channel_id)
        for message_id in message_ids:
            self.store.remove(message_id)
        data: Json = {"ids": [str(m) for m in message_ids], "channel_id": str(channel_id)}
        if channel.guild_id is not None:
            data["guild_id"] = str(channel.guild_id)
        self.world.announce("MESSAGE_DELETE_BULK", data)

    # ----- the bot's side of messages (called by REST handlers) --------------------------------

    def require(self, channel: FakeChannel, needed: int) -> None:
        perms = self.world.permissions(self.world.bot.id, channel)
        if not perms & VIEW_CHANNEL:
            raise DiscordError(403, 50001, "Missing Access")
        if perms & needed != needed:
            raise DiscordError(403, 50013, "Missing Permissions")

    @staticmethod
    def validate_content(body: Json, files: Sequence[Any], field_path: Sequence[str] = ("content",)) -> None:
        content = body.get("content")
        if content is not None and len(str(content)) > MAX_CONTENT_CHARS:
            raise too_long_error(field_path)
        has_payload = any(body.get(k) for k in ("content", "embeds", "sticker_ids", "components", "poll"))
        if not has_payload and not files:
            raise DiscordError(400, 50006, "Cannot send an empty message")

    def bot_send(self, channel_id: int, body: Json, files: Sequence[UploadedFile] = ()) -> Json:
        channel = self.world.channel(channel_id)
        self.require(channel, SEND_MESSAGES_IN_THREADS if channel.is_thread else SEND_MESSAGES)
        self.validate_content(body, files)
        message = self.build_message(
            channel, self.world.bot, body, attachments=self.make_attachments(channel_id, files)
        )
        return self.store_and_announce(message)

    def apply_edit(self, message: Json, body: Json, files: Sequence[UploadedFile] = ()) -> None:
        """PATCH semantics: only keys present change; `attachments` lists the ones to keep."""
        if "content" in body and body["content"] is not None and len(body["content"]) > MAX_CONTENT_CHARS:
            raise too_long_error(("content",))
        for key in ("content", "embeds", "components"):
            if key in body:
                message[key] = body[key] if body[key] is not None else ([] if key != "content" else "")
        if "attachments" in body or files:
            keep = {str(a.get("id")) for a in body.get("attachments") or []}
            kept = [a for a in message["attachments"] if a["id"] in keep]
            message["attachments"] = kept + self.make_attachments(int(message["channel_id"]), files)
        message["flags"] = int(message.get("flags", 0)) & ~FLAG_LOADING
        message["edited_timestamp"] = datetime.now(UTC).isoformat()

    def bot_edit(
        self, channel_id: int, message_id: int, body: Json, files: Sequence[UploadedFile] = ()
    ) -> Json:
        message = self.world.message(message_id, channel_id)
        if int(message["author"]["id"]) != self.world.bot.id:
            raise DiscordError(403, 50005, "Cannot edit a message authored by another user")
        self.apply_edit(message, body, files)
        self.world.announce("MESSAGE_UPDATE", self.world.gateway_message(message))
        return message

    def bot_delete(self, channel_id: int, message_id: int) -> None:
        message = self.world.message(message_id, channel_id)
        if int(message["author"]["id"]) != self.world.bot.id:
            self.require(self.world.channel(channel_id), MANAGE_MESSAGES)
        self.delete_message(message_id)

    def bot_bulk_delete(self, channel_id: int, message_ids: Sequence[int]) -> None:
        channel = self.world.channel(channel_id)
        self.require(channel, MANAGE_MESSAGES)
        if not 2 <= len(message_ids) <= 100:
            raise DiscordError(
                400, 50016, "You must provide at least 2 and fewer than 100 messages to delete."
            )
        now = datetime.now(UTC).timestamp()
        for message_id in message_ids:
            if now - datetime.fromisoformat(
                self.world.message(message_id, channel_id)["timestamp"]
            ).timestamp() > (BULK_DELETE_MAX_AGE_S):
                raise DiscordError(
                    400, 50034, "You can only bulk delete messages that are under 14 days old."
                )
        self.bulk_delete(channel_id, message_ids)

    def bot_history(self, channel_id: int, query: Json) -> list[Json]:
        channel = self.world.channel(channel_id)
        perms = self.world.permissions(self.world.bot.id, channel)
        if not perms & VIEW_CHANNEL:
            raise DiscordError(403, 50001, "Missing Access")
        if not perms & READ_MESSAGE_HISTORY:  # Discord answers an empty list, not an error
            return []
        limit = max(1, min(100, int(query.get("limit", 50))))

        def opt(name: str) -> int | None:
            return int(query[name]) if query.get(name) else None

        return self.store.history(channel_id, limit, opt("before"), opt("after"), opt("around"))
