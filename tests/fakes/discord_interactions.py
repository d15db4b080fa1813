"""Interactions of the fake Discord (commands themselves live in discord_commands).

Flow (Discord docs "Receiving and Responding"): the fake creates INTERACTION_CREATE (slash type 2,
autocomplete type 4, button type 3); the bot answers once on POST /interactions/{id}/{token}/callback
and may then use the webhook routes with the same token (followups, @original edits). Every answer is
appended to `log` so tests can assert what was sent and whether it was ephemeral.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.discord_commands import CommandRegistry
from tests.fakes.discord_messages import (
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    MAX_CONTENT_CHARS,
    MessageDesk,
    too_long_error,
)
from tests.fakes.discord_model import Json
from tests.fakes.discord_world import DiscordError, FakeWorld, UploadedFile, unknown

INTERACTION_PING, INTERACTION_COMMAND, INTERACTION_COMPONENT, INTERACTION_AUTOCOMPLETE = 1, 2, 3, 4
CALLBACK_MESSAGE, CALLBACK_DEFERRED_MESSAGE = 4, 5
CALLBACK_DEFERRED_UPDATE, CALLBACK_UPDATE_MESSAGE, CALLBACK_AUTOCOMPLETE, CALLBACK_MODAL = 6, 7, 8, 9
MESSAGE_TYPE_CHAT_INPUT_COMMAND = 20
ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024  # 10 MiB, the free-tier upload limit discord.py reads


@dataclass
class FakeInteraction:
    id: int
    token: str
    type: int
    channel_id: int
    user_id: int
    payload: Json
    component_message_id: int | None = None
    callback_type: int | None = None
    original_message_id: int | None = None
    followup_ids: list[int] = field(default_factory=list)


def _find_component(components: Sequence[Any], custom_id: str) -> Json | None:
    for component in components:
        if not isinstance(component, dict):
            continue
        if component.get("custom_id") == custom_id:
            return component
        found = _find_component(component.get("components") or [], custom_id)
        if found is not None:
            return found
    return None


class InteractionDesk:
    """Live interactions of one FakeWorld and the answers the bot gave them."""

    def __init__(self, world: FakeWorld, chat: MessageDesk, commands: CommandRegistry) -> None:
        self.world = world
        self.chat = chat
        self.commands = commands
        self.interactions: dict[int, FakeInteraction] = {}
        self.log: list[Json] = []

    # ----- creating interactions ---------------------------------------------------------------

    def _base_payload(self, interaction_type: int, user_id: int, channel_id: int) -> FakeInteraction:
        world = self.world
        channel = world.channel(channel_id)
        user = world.user(user_id)
        interaction = FakeInteraction(
            id=world.snowflakes.next(),
            token=f"itx-{secrets.token_urlsafe(32)}",
            type=interaction_type,
            channel_id=channel_id,
            user_id=user_id,
            payload={},
        )
        payload: Json = {
            "id": str(interaction.id),
            "application_id": str(world.application_id),
            "type": interaction_type,
            "token": interaction.token,
            "version": 1,
            "channel_id": str(channel_id),
            "channel": world.channel_payload(channel),
            "app_permissions": str(world.permissions(world.bot.id, channel)),
            "locale": "en-US",
            "entitlements": [],
            "attachment_size_limit": ATTACHMENT_SIZE_LIMIT,
        }
        if channel.guild_id is None:
            payload.update(user=user.payload(), context=1, authorizing_integration_owners={"0": str(user_id)})
        else:
            member = world.member_payload(channel.guild_id, user_id)
            if member is None:
                raise DiscordError(403, 50001, f"user {user_id} is not a member of guild {channel.guild_id}")
            member["permissions"] = str(world.permissions(user_id, channel))
            payload.update(
                guild_id=str(channel.guild_id),
                guild={"id": str(channel.guild_id), "locale": "en-US", "features": []},
                guild_locale="en-US",
                member=member,
                context=0,
                authorizing_integration_owners={"0": str(channel.guild_id)},
            )
        interaction.payload = payload
        return interaction

    def create_command(
        self,
        user_id: int,
        channel_id: int,
        path: str,
        options: Json | None = None,
        *,
        focused: str | None = None,
    ) -> Json:
        """Slash invocation of 'name', 'group sub' or 'group subgroup sub'; focused → autocomplete."""
        data = self.commands.invocation_data(user_id, channel_id, path, options, focused)
        kind = INTERACTION_AUTOCOMPLETE if focused else INTERACTION_COMMAND
        interaction = self._base_payload(kind, user_id, channel_id)
        interaction.payload["data"] = data
        return self._deliver(interaction)

    def click(
        self, user_id: int, message_id: int, custom_id: str, values: Sequence[str] | None = None
    ) -> Json:
        """A button (or select) press on a message component."""
        world = self.world
        message = world.message(message_id)
        component = _find_component(message.get("components") or [], custom_id)
        if component is None:
            raise DiscordError(400, 50035, f"message {message_id} has no component {custom_id!r}")
        if world.messages.is_ephemeral(message_id):
            owner = (message.get("interaction_metadata") or {}).get("user", {}).get("id")
            if owner != str(user_id):
                raise DiscordError(403, 50001, "ephemeral message is not visible to this user")
        interaction = self._base_payload(INTERACTION_COMPONENT, user_id, int(message["channel_id"]))
        interaction.component_message_id = message_id
        data: Json = {"custom_id": custom_id, "component_type": component["type"]}
        if values is not None:
            data["values"] = list(values)
        interaction.payload.update(data=data, message=dict(message))
        return self._deliver(interaction)

    def _deliver(self, interaction: FakeInteraction) -> Json:
        self.interactions[interaction.id] = interaction
        channel = self.world.channels[interaction.channel_id]
        self.world.dispatcher("INTERACTION_CREATE", interaction.payload, channel.guild_id)
        return interaction.payload

    # ----- responses ---------------------------------------------------------------------------

    def _by_token(self, application_id: int, token: str) -> FakeInteraction:
        for interaction in self.interactions.values():
            if interaction.token == token and application_id == self.world.application_id:
                return interaction
        raise unknown("Webhook", 10015)

    def responses(self, interaction_id: int) -> list[Json]:
        return [entry for entry in self.log if entry["interaction_id"] == str(interaction_id)]

    def _record(self, interaction: FakeInteraction, kind: str, body: Json, **extra: Any) -> None:
        self.log.append({"interaction_id": str(interaction.id), "kind": kind, "body": body, **extra})

    def _new_message(self, interaction: FakeInteraction, body: Json, files: Sequence[UploadedFile]) -> Json:
        world = self.world
        channel = world.channels[interaction.channel_id]
        is_command = interaction.type == INTERACTION_COMMAND
        extra = {
            "webhook_id": str(world.application_id),
            "application_id": str(world.application_id),
            "type": MESSAGE_TYPE_CHAT_INPUT_COMMAND if is_command else 0,
            "interaction_metadata": {
                "id": str(interaction.id),
                "type": interaction.type,
                "user": world.users[interaction.user_id].payload(),
                "authorizing_integration_owners": interaction.payload["authorizing_integration_owners"],
            },
        }
        attachments = self.chat.make_attachments(channel.id, files)
        message = self.chat.build_message(channel, world.bot, body, attachments=attachments, extra=extra)
        return self.chat.store_and_announce(message, ephemeral=bool(message["flags"] & FLAG_EPHEMERAL))

    def callback(self, interaction_id: int, token: str, body: Json, files: Sequence[UploadedFile]) -> Json:
        """POST /interactions/{id}/{token}/callback; returns the with_response body."""
        interaction = self.interactions.get(interaction_id)
        if interaction is None or interaction.token != token:
            raise unknown("interaction", 10062)
        if interaction.callback_type is not None:
            raise DiscordError(400, 40060, "Interaction has already been acknowledged.")
        kind = int(body["type"])
        data: Json = body.get("data") or {}
        content = data.get("content")
        if kind == CALLBACK_UPDATE_MESSAGE and content is not None and len(content) > MAX_CONTENT_CHARS:
            raise too_long_error(("data", "content"))
        message: Json | None = None
        if kind == CALLBACK_MESSAGE:
            self.chat.validate_content(data, files, ("data", "content"))
            message = self._new_message(interaction, data, files)
        elif kind == CALLBACK_DEFERRED_MESSAGE:
            flags = FLAG_LOADING | (int(data.get("flags") or 0) & FLAG_EPHEMERAL)
            message = self._new_message(interaction, {"content": "", "flags": flags}, ())
        elif kind in (CALLBACK_DEFERRED_UPDATE, CALLBACK_UPDATE_MESSAGE):
            if interaction.component_message_id is None:
                raise DiscordError(400, 40004, "update callbacks need a component interaction")
            message = self.world.message(interaction.component_message_id)
            if kind == CALLBACK_UPDATE_MESSAGE:
                self.chat.apply_edit(message, data, files)
                if not self.world.messages.is_ephemeral(int(message["id"])):
                    self.world.announce("MESSAGE_UPDATE", self.world.gateway_message(message))
        elif kind not in (CALLBACK_AUTOCOMPLETE, CALLBACK_MODAL):
            raise DiscordError(400, 50035, f"unsupported callback type {kind}")
        interaction.callback_type = kind
        ephemeral = bool(message and self.world.messages.is_ephemeral(int(message["id"])))
        if message is not None:
            interaction.original_message_id = int(message["id"])
        self._record(
            interaction,
            "callback",
            body,
            type=kind,
            ephemeral=ephemeral,
            message_id=message["id"] if message else None,
            files=[f.filename for f in files],
        )
        result: Json = {
            "interaction": {
                "id": str(interaction.id),
                "type": interaction.type,
                "response_message_id": message["id"] if message else None,
                "response_message_loading": kind == CALLBACK_DEFERRED_MESSAGE,
                "response_message_ephemeral": ephemeral,
            }
        }
        if message is not None and kind in (
            CALLBACK_MESSAGE,
            CALLBACK_DEFERRED_MESSAGE,
            CALLBACK_UPDATE_MESSAGE,
        ):
            result["resource"] = {"type": kind, "message": message}
        return result

    def followup(self, application_id: int, token: str, body: Json, files: Sequence[UploadedFile]) -> Json:
        """POST /webhooks/{app}/{token}: the first followup after a deferral replaces the loading message."""
        interaction = self._acknowledged(application_id, token)
        self.chat.validate_content(body, files)
        original = self._original(interaction) if interaction.original_message_id else None
        if (
            interaction.callback_type == CALLBACK_DEFERRED_MESSAGE
            and not interaction.followup_ids
            and original is not None
            and int(original.get("flags", 0)) & FLAG_LOADING
        ):
            message = self._edit(interaction, original, body, files)
        else:
            message = self._new_message(interaction, body, files)
        interaction.followup_ids.append(int(message["id"]))
        self._record(
            interaction,
            "followup",
            body,
            message_id=message["id"],
            ephemeral=self.world.messages.is_ephemeral(int(message["id"])),
            files=[f.filename for f in files],
        )
        return message

    def _acknowledged(self, application_id: int, token: str) -> FakeInteraction:
        interaction = self._by_token(application_id, token)
        if interaction.callback_type is None:
            raise unknown("Webhook", 10015)
        return interaction

    def _original(self, interaction: FakeInteraction) -> Json:
        if interaction.original_message_id is None:
            raise unknown("Message", 10008)
        return self.world.message(interaction.original_message_id)

    def _webhook_message(self, interaction: FakeInteraction, message_ref: str) -> Json:
        if message_ref == "@original":
            return self._original(interaction)
        message_id = int(message_ref)
        if message_id not in interaction.followup_ids and message_id != interaction.original_message_id:
            raise unknown("Message", 10008)
        return self.world.message(message_id)

    def _edit(
        self, interaction: FakeInteraction, message: Json, body: Json, files: Sequence[UploadedFile]
    ) -> Json:
        self.chat.apply_edit(message, body, files)
        if not self.world.messages.is_ephemeral(int(message["id"])):
            self.world.announce("MESSAGE_UPDATE", self.world.gateway_message(message))
        return message

    def get_message(self, application_id: int, token: str, message_ref: str) -> Json:
        return self._webhook_message(self._acknowledged(application_id, token), message_ref)

    def edit_message(
        self, application_id: int, token: str, message_ref: str, body: Json, files: Sequence[UploadedFile]
    ) -> Json:
        interaction = self._acknowledged(application_id, token)
        message = self._edit(interaction, self._webhook_message(interaction, message_ref), body, files)
        self._record(
            interaction,
            "edit",
            body,
            message_id=message["id"],
            target=message_ref,
            ephemeral=self.world.messages.is_ephemeral(int(message["id"])),
            files=[f.filename for f in files],
        )
        return message

    def delete_message(self, application_id: int, token: str, message_ref: str) -> None:
        interaction = self._acknowledged(application_id, token)
        message = self._webhook_message(interaction, message_ref)
        ephemeral = self.world.messages.is_ephemeral(int(message["id"]))
        self.chat.delete_message(int(message["id"]))
        self._record(
            interaction, "delete", {}, message_id=message["id"], target=message_ref, ephemeral=ephemeral
        )
