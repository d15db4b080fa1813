"""Application commands registered with the fake Discord, and the `data` of invoking one.

PUT /applications/{app}/commands (or /guilds/{g}/commands) replaces the list and echoes it with id,
application_id and version, as Discord does. An invocation is only built for a registered command the
member can see (default_member_permissions, DM availability), like the Discord client's command picker.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.discord_model import DM, Json
from tests.fakes.discord_world import DiscordError, FakeWorld, unknown

CHAT_INPUT = 1
SUB_COMMAND, SUB_COMMAND_GROUP = 1, 2
OPTION_INTEGER, OPTION_BOOLEAN, OPTION_USER, OPTION_CHANNEL, OPTION_ROLE = 4, 5, 6, 7, 8
OPTION_NUMBER = 10
CONTEXT_BOT_DM = 1


class CommandRegistry:
    def __init__(self, world: FakeWorld) -> None:
        self.world = world
        self.global_commands: list[Json] = []
        self.guild_commands: dict[int, list[Json]] = {}

    def put(self, application_id: int, commands: list[Json], guild_id: int | None = None) -> list[Json]:
        """Bulk overwrite; a command keeps its id when name and type stay the same (as on Discord)."""
        if application_id != self.world.application_id:
            raise unknown("Application", 10002)
        if guild_id is not None:
            self.world.guild(guild_id)
        previous = {(c["name"], c.get("type", CHAT_INPUT)): c["id"] for c in self.listed(guild_id)}
        stored = []
        for command in commands:
            key = (command["name"], command.get("type", CHAT_INPUT))
            entry = {
                "type": CHAT_INPUT,
                "description": "",
                "options": [],
                "default_member_permissions": None,
                "dm_permission": True,
                "nsfw": False,
                **command,
                "id": previous.get(key) or str(self.world.snowflakes.next()),
                "application_id": str(self.world.application_id),
                "version": str(self.world.snowflakes.next()),
            }
            if entry["default_member_permissions"] is not None:  # Discord answers permission bits as strings
                entry["default_member_permissions"] = str(entry["default_member_permissions"])
            if guild_id is not None:
                entry["guild_id"] = str(guild_id)
            stored.append(entry)
        if guild_id is None:
            self.global_commands = stored
        else:
            self.guild_commands[guild_id] = stored
        return stored

    def listed(self, guild_id: int | None = None) -> list[Json]:
        return self.global_commands if guild_id is None else self.guild_commands.get(guild_id, [])

    def find(self, name: str, guild_id: int | None) -> Json:
        candidates = (self.listed(guild_id) if guild_id else []) + self.global_commands
        for command in candidates:
            if command["name"] == name and command.get("type", CHAT_INPUT) == CHAT_INPUT:
                return command
        raise DiscordError(404, 10063, f"Unknown application command {name!r}: sync it first")

    def check_visible(self, command: Json, channel_id: int, user_id: int) -> None:
        """Discord hides commands a member may not use; refuse to simulate invoking them."""
        world = self.world
        channel = world.channel(channel_id)
        if channel.type == DM:
            contexts = command.get("contexts")
            if (contexts is not None and CONTEXT_BOT_DM not in contexts) or command.get(
                "dm_permission"
            ) is False:
                raise DiscordError(403, 50001, f"command {command['name']!r} is not available in DMs")
            return
        required = command.get("default_member_permissions")
        if required is None:
            return
        needed = int(required)
        guild = world.guilds[channel.guild_id] if channel.guild_id else None
        perms = guild.base_permissions(user_id) if guild else 0
        if needed == 0 or perms & needed != needed:  # "0" means administrators only
            raise DiscordError(403, 50013, f"user lacks default_member_permissions for {command['name']!r}")

    def invocation_data(
        self, user_id: int, channel_id: int, path: str, options: Json | None, focused: str | None
    ) -> Json:
        """INTERACTION_CREATE `data` for 'name', 'group sub' or 'group subgroup sub' with {option: value}."""
        names = path.split()
        guild_id = self.world.channel(channel_id).guild_id
        command = self.find(names[0], guild_id)
        self.check_visible(command, channel_id, user_id)
        resolved: Json = {}
        schema: list[Json] = command.get("options") or []
        nested: list[Json] = []
        outer = nested
        for name in names[1:]:
            spec = next(
                (o for o in schema if o["name"] == name and o["type"] in (SUB_COMMAND, SUB_COMMAND_GROUP)),
                None,
            )
            if spec is None:
                raise DiscordError(400, 50035, f"unknown subcommand {name!r} in {path!r}")
            inner: list[Json] = []
            nested.append({"name": name, "type": spec["type"], "options": inner})
            nested, schema = inner, spec.get("options") or []
        for name, value in (options or {}).items():
            nested.append(self._option(schema, name, value, resolved, focused == name, guild_id))
        data: Json = {"id": command["id"], "name": command["name"], "type": CHAT_INPUT, "options": outer}
        if "guild_id" in command:
            data["guild_id"] = command["guild_id"]
        if resolved:
            data["resolved"] = resolved
        return data

    def _option(
        self, schema: list[Json], name: str, value: Any, resolved: Json, focused: bool, guild_id: int | None
    ) -> Json:
        spec = next((o for o in schema if o["name"] == name), None)
        if spec is None:
            raise DiscordError(400, 50035, f"unknown option {name!r}")
        kind = spec["type"]
        option: Json = {"name": name, "type": kind, "value": value}
        if focused:  # autocomplete sends the partial text typed so far
            option.update(focused=True, value=str(value))
        elif kind == OPTION_INTEGER:
            option["value"] = int(value)
        elif kind == OPTION_NUMBER:
            option["value"] = float(value)
        elif kind == OPTION_BOOLEAN:
            option["value"] = bool(value)
        elif kind == OPTION_USER:
            user_id = int(value)
            option["value"] = str(user_id)
            resolved.setdefault("users", {})[str(user_id)] = self.world.user(user_id).payload()
            member = self.world.member_payload(guild_id, user_id, with_user=False) if guild_id else None
            if member is not None:
                resolved.setdefault("members", {})[str(user_id)] = {**member, "permissions": "0"}
        elif kind == OPTION_CHANNEL:
            channel = self.world.channel(int(value))
            option["value"] = str(channel.id)
            channel_data = {**self.world.channel_payload(channel), "permissions": "0"}
            resolved.setdefault("channels", {})[str(channel.id)] = channel_data
        elif kind == OPTION_ROLE:
            # Discord resolves a role option to the role object, as it does users and channels.
            guild = self.world.guild(guild_id) if guild_id else None
            role = guild.roles.get(int(value)) if guild else None
            if role is None:
                raise DiscordError(400, 50035, f"option {name!r}: unknown role {value}")
            option["value"] = str(role.id)
            resolved.setdefault("roles", {})[str(role.id)] = role.payload()
        return option
