"""State and operations of the fake Discord: who exists, what was said, which events go out.

Every mutation that Discord would announce calls `self.dispatcher(event, data, guild_id)`; the gateway
module installs the real dispatcher. REST and control handlers both go through these methods, so a
bot's own message and a simulated user's message follow the same path (stored, then MESSAGE_CREATE).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tests.fakes.discord_model import (
    DEFAULT_EVERYONE_PERMISSIONS,
    DM,
    GUILD_TEXT,
    MANAGE_GUILD,
    PUBLIC_THREAD,
    READ_MESSAGE_HISTORY,
    SEND_MESSAGES,
    VIEW_CHANNEL,
    FakeChannel,
    FakeGuild,
    FakeMember,
    FakeRole,
    FakeUser,
    Json,
    MessageStore,
    SnowflakeFactory,
    iso_time,
)

Dispatcher = Callable[[str, Json, int | None], None]


class DiscordError(Exception):
    """An API error with Discord's JSON error body ({"message", "code", "errors"?})."""

    def __init__(self, status: int, code: int, message: str, errors: Json | None = None) -> None:
        super().__init__(f"{status} {code} {message}")
        self.status = status
        self.code = code
        self.message = message
        self.errors = errors

    def body(self) -> Json:
        data: Json = {"message": self.message, "code": self.code}
        if self.errors is not None:
            data["errors"] = self.errors
        return data


def unknown(what: str, code: int) -> DiscordError:
    return DiscordError(404, code, f"Unknown {what}")


@dataclass
class UploadedFile:
    filename: str
    data: bytes
    content_type: str | None = None


@dataclass
class DefaultIds:
    """Ids of the world every FakeDiscord starts with."""

    application: int
    bot: int
    owner: int
    admin: int
    alice: int
    bob: int
    guild: int
    admin_role: int
    general: int
    random: int
    thread: int

    def as_json(self) -> Json:
        return {name: str(value) for name, value in self.__dict__.items()}


APP_FLAG_MESSAGE_CONTENT = 1 << 18  # GATEWAY_MESSAGE_CONTENT (verified apps)
APP_FLAG_MESSAGE_CONTENT_LIMITED = 1 << 19  # GATEWAY_MESSAGE_CONTENT_LIMITED


@dataclass
class FakeWorld:
    bot_name: str = "Eva"
    cdn_base: str = "http://127.0.0.1"
    snowflakes: SnowflakeFactory = field(default_factory=SnowflakeFactory)
    users: dict[int, FakeUser] = field(default_factory=dict)
    guilds: dict[int, FakeGuild] = field(default_factory=dict)
    channels: dict[int, FakeChannel] = field(default_factory=dict)
    messages: MessageStore = field(default_factory=MessageStore)
    attachments: dict[int, bytes] = field(default_factory=dict)
    request_log: list[Json] = field(default_factory=list)
    dispatcher: Dispatcher = field(default=lambda event, data, guild_id: None)
    # Guilds in a Discord outage: READY lists them as unavailable and sends no GUILD_CREATE.
    outages: set[int] = field(default_factory=set)
    # The Developer Portal's Message Content switch (Bot > Privileged Gateway Intents). Off: the
    # application's flags lack the bit, and an IDENTIFY asking for the intent is closed with 4014.
    message_content_enabled: bool = True
    # The Server Members switch, likewise: off, an IDENTIFY asking for GUILD_MEMBERS gets 4014.
    server_members_enabled: bool = True

    def __post_init__(self) -> None:
        self.bot = self.add_user(self.bot_name, bot=True)
        self.application_id = self.bot.id  # Discord: a bot user's id equals its application's id
        owner = self.add_user("owner")
        admin = self.add_user("admin")
        alice = self.add_user("alice")
        bob = self.add_user("bob")
        self.app_owner_id = owner.id
        guild = self.add_guild("Test Guild", owner_id=owner.id)
        for user in (owner, admin, alice, bob):
            self.add_member(guild.id, user.id, admin=user is admin)
        general = self.add_text_channel(guild.id, "general")
        random = self.add_text_channel(guild.id, "random")
        thread = self.add_thread(general.id, "general-thread", owner_id=alice.id)
        assert guild.admin_role_id is not None
        self.ids = DefaultIds(
            application=self.application_id,
            bot=self.bot.id,
            owner=owner.id,
            admin=admin.id,
            alice=alice.id,
            bob=bob.id,
            guild=guild.id,
            admin_role=guild.admin_role_id,
            general=general.id,
            random=random.id,
            thread=thread.id,
        )

    def application_flags(self) -> int:
        """GATEWAY_MESSAGE_CONTENT_LIMITED (1 << 19) when the switch is on: what Discord reports for
        an unverified app (under 100 servers) that enabled the intent; a verified one has 1 << 18."""
        return APP_FLAG_MESSAGE_CONTENT_LIMITED if self.message_content_enabled else 0

    # ----- lookups ------------------------------------------------------------------------------

    def user(self, user_id: int) -> FakeUser:
        if user_id not in self.users:
            raise unknown("User", 10013)
        return self.users[user_id]

    def guild(self, guild_id: int) -> FakeGuild:
        if guild_id not in self.guilds:
            raise unknown("Guild", 10004)
        return self.guilds[guild_id]

    def channel(self, channel_id: int) -> FakeChannel:
        if channel_id not in self.channels:
            raise unknown("Channel", 10003)
        return self.channels[channel_id]

    def message(self, message_id: int, channel_id: int | None = None) -> Json:
        found = self.messages.get(message_id)
        if found is None or (channel_id is not None and int(found["channel_id"]) != channel_id):
            raise unknown("Message", 10008)
        return found

    def channel_messages(self, channel_id: int) -> list[Json]:
        return self.messages.channel_messages(channel_id)

    def permission_source(self, channel: FakeChannel) -> FakeChannel:
        """Threads take their permissions from the parent channel."""
        if channel.is_thread and channel.parent_id in self.channels:
            return self.channels[channel.parent_id]
        return channel

    def permissions(self, user_id: int, channel: FakeChannel) -> int:
        if channel.guild_id is None:
            return VIEW_CHANNEL | SEND_MESSAGES | READ_MESSAGE_HISTORY
        return self.guilds[channel.guild_id].channel_permissions(user_id, self.permission_source(channel))

    # ----- building the world -------------------------------------------------------------------

    def add_user(self, username: str, *, bot: bool = False) -> FakeUser:
        user = FakeUser(id=self.snowflakes.next(), username=username, bot=bot)
        self.users[user.id] = user
        return user

    def add_guild(
        self, name: str, *, owner_id: int | None = None, shard: tuple[int, int] | None = None
    ) -> FakeGuild:
        """``shard``: (shard id, shard count) the guild's events go to; any when None."""
        guild_id = self.snowflakes.on_shard(*shard) if shard is not None else self.snowflakes.next()
        guild = FakeGuild(id=guild_id, name=name, owner_id=owner_id or self.bot.id)
        guild.roles[guild_id] = FakeRole(
            id=guild_id, name="@everyone", permissions=DEFAULT_EVERYONE_PERMISSIONS
        )
        admin_role = FakeRole(id=self.snowflakes.next(), name="Admin", permissions=MANAGE_GUILD, position=1)
        guild.roles[admin_role.id] = admin_role
        guild.admin_role_id = admin_role.id
        guild.members[self.bot.id] = FakeMember(self.bot, [], joined_id=self.snowflakes.next())
        self.guilds[guild_id] = guild
        self.dispatcher("GUILD_CREATE", self.guild_create_payload(guild), guild_id)
        return guild

    def add_role(self, guild_id: int, name: str, permissions: int) -> FakeRole:
        guild = self.guild(guild_id)
        role = FakeRole(
            id=self.snowflakes.next(), name=name, permissions=permissions, position=len(guild.roles)
        )
        guild.roles[role.id] = role
        self.dispatcher("GUILD_ROLE_CREATE", {"guild_id": str(guild_id), "role": role.payload()}, guild_id)
        return role

    def give_role(self, guild_id: int, user_id: int, role_id: int) -> FakeMember:
        guild = self.guild(guild_id)
        member = guild.members[user_id]
        if role_id not in guild.roles:
            raise unknown("Role", 10011)
        member.role_ids.append(role_id)
        self.dispatcher("GUILD_MEMBER_UPDATE", {**member.payload(), "guild_id": str(guild_id)}, guild_id)
        return member

    def take_role(self, guild_id: int, user_id: int, role_id: int) -> FakeMember:
        """A role taken from a member (Server Settings, or a bot): GUILD_MEMBER_UPDATE follows."""
        guild = self.guild(guild_id)
        member = guild.members[user_id]
        if role_id in member.role_ids:
            member.role_ids.remove(role_id)
        self.dispatcher("GUILD_MEMBER_UPDATE", {**member.payload(), "guild_id": str(guild_id)}, guild_id)
        return member

    def set_everyone_permissions(self, guild_id: int, permissions: int) -> None:
        guild = self.guild(guild_id)
        guild.everyone.permissions = permissions
        self.dispatcher(
            "GUILD_ROLE_UPDATE", {"guild_id": str(guild_id), "role": guild.everyone.payload()}, guild_id
        )

    def add_member(
        self, guild_id: int, user_id: int, *, admin: bool = False, role_ids: Iterable[int] = ()
    ) -> FakeMember:
        guild = self.guild(guild_id)
        roles = list(role_ids)
        if admin and guild.admin_role_id is not None:
            roles.append(guild.admin_role_id)
        member = FakeMember(self.user(user_id), roles, joined_id=self.snowflakes.next())
        guild.members[user_id] = member
        self.dispatcher("GUILD_MEMBER_ADD", {**member.payload(), "guild_id": str(guild_id)}, guild_id)
        return member

    def add_text_channel(
        self, guild_id: int, name: str, *, overwrites: list[Json] | None = None
    ) -> FakeChannel:
        guild = self.guild(guild_id)
        channel = FakeChannel(
            id=self.snowflakes.next(),
            type=GUILD_TEXT,
            name=name,
            guild_id=guild_id,
            position=len(guild.channel_ids),
            permission_overwrites=list(overwrites or []),
        )
        self.channels[channel.id] = channel
        guild.channel_ids.append(channel.id)
        self.dispatcher("CHANNEL_CREATE", self.channel_payload(channel), guild_id)
        return channel

    def add_thread(self, parent_id: int, name: str, *, owner_id: int) -> FakeChannel:
        parent = self.channel(parent_id)
        assert parent.guild_id is not None, "threads live in guild channels"
        thread = FakeChannel(
            id=self.snowflakes.next(),
            type=PUBLIC_THREAD,
            name=name,
            guild_id=parent.guild_id,
            parent_id=parent.id,
            owner_id=owner_id,
        )
        self.channels[thread.id] = thread
        self.guilds[parent.guild_id].channel_ids.append(thread.id)
        self.dispatcher(
            "THREAD_CREATE", {**self.channel_payload(thread), "newly_created": True}, parent.guild_id
        )
        return thread

    def open_dm(self, user_id: int) -> FakeChannel:
        self.user(user_id)
        for channel in self.channels.values():
            if channel.type == DM and channel.recipient_id == user_id:
                return channel
        channel = FakeChannel(id=self.snowflakes.next(), type=DM, recipient_id=user_id)
        self.channels[channel.id] = channel
        return channel

    def delete_channel(self, channel_id: int) -> Json:
        channel = self.channel(channel_id)
        payload = self.channel_payload(channel)
        children = [c.id for c in self.channels.values() if c.parent_id == channel_id and c.is_thread]
        for child in children:  # Discord drops the threads with the channel (no THREAD_DELETE each)
            self._forget_channel(child)
        self._forget_channel(channel_id)
        event = "THREAD_DELETE" if channel.is_thread else "CHANNEL_DELETE"
        if channel.is_thread:
            payload = {k: payload[k] for k in ("id", "guild_id", "parent_id", "type")}
        self.dispatcher(event, payload, channel.guild_id)
        return payload

    def _forget_channel(self, channel_id: int) -> None:
        channel = self.channels.pop(channel_id)
        self.messages.drop_channel(channel_id)
        if channel.guild_id is not None and channel.guild_id in self.guilds:
            self.guilds[channel.guild_id].channel_ids.remove(channel_id)

    def remove_guild(self, guild_id: int) -> None:
        """The bot is kicked (or the guild deleted): GUILD_DELETE without `unavailable`."""
        guild = self.guild(guild_id)
        for channel_id in list(guild.channel_ids):
            self._forget_channel(channel_id)
        del self.guilds[guild_id]
        self.dispatcher("GUILD_DELETE", {"id": str(guild_id)}, guild_id)

    def kick_bot(self, guild_id: int) -> None:
        """The bot is removed from a guild that goes on existing: GUILD_DELETE without
        `unavailable`; its channels answer 403 Missing Access from then on."""
        guild = self.guild(guild_id)
        del guild.members[self.bot.id]
        self.dispatcher("GUILD_DELETE", {"id": str(guild_id)}, guild_id)

    def invite_bot(self, guild_id: int) -> None:
        guild = self.guild(guild_id)
        guild.members[self.bot.id] = FakeMember(self.bot, [], joined_id=self.snowflakes.next())
        self.dispatcher("GUILD_CREATE", self.guild_create_payload(guild), guild_id)

    def bot_guilds(self) -> list[FakeGuild]:
        """What READY lists: every guild the bot is a member of, available or not."""
        return [g for g in self.guilds.values() if self.bot.id in g.members]

    def start_outage(self, guild_id: int) -> None:
        self.guild(guild_id)
        self.outages.add(guild_id)
        self.dispatcher("GUILD_DELETE", {"id": str(guild_id), "unavailable": True}, guild_id)

    def end_outage(self, guild_id: int) -> None:
        self.outages.discard(guild_id)
        self.dispatcher("GUILD_CREATE", self.guild_create_payload(self.guild(guild_id)), guild_id)

    # ----- payloads -----------------------------------------------------------------------------

    def channel_payload(self, channel: FakeChannel) -> Json:
        return channel.payload(self.users, self.messages.last_id(channel.id))

    def guild_create_payload(self, guild: FakeGuild) -> Json:
        channels = [self.channels[c] for c in guild.channel_ids]
        return {
            "id": str(guild.id),
            "name": guild.name,
            "icon": None,
            "owner_id": str(guild.owner_id),
            "unavailable": False,
            "large": False,
            "member_count": len(guild.members),
            "joined_at": iso_time(guild.members[self.bot.id].joined_id),
            "preferred_locale": "en-US",
            "features": [],
            "emojis": [],
            "stickers": [],
            "roles": [role.payload() for role in guild.roles.values()],
            "members": [member.payload() for member in guild.members.values()],
            "channels": [self.channel_payload(c) for c in channels if not c.is_thread],
            "threads": [self.channel_payload(c) for c in channels if c.is_thread],
            "presences": [],
            "voice_states": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    def member_payload(self, guild_id: int, user_id: int, *, with_user: bool = True) -> Json | None:
        guild = self.guilds.get(guild_id)
        member = guild.members.get(user_id) if guild else None
        return member.payload(with_user=with_user) if member else None

    def gateway_message(self, message: Json) -> Json:
        """REST message shape plus what the gateway adds: guild_id, author member, mention members."""
        data = dict(message)
        channel = self.channels.get(int(message["channel_id"]))
        if channel is None or channel.guild_id is None:
            return data
        guild_id = channel.guild_id
        data["guild_id"] = str(guild_id)
        if "webhook_id" not in message:
            member = self.member_payload(guild_id, int(message["author"]["id"]), with_user=False)
            if member is not None:
                data["member"] = member
        data["mentions"] = [
            {
                **user,
                **(
                    {"member": m}
                    if (m := self.member_payload(guild_id, int(user["id"]), with_user=False))
                    else {}
                ),
            }
            for user in message.get("mentions", [])
        ]
        return data

    def announce(self, event: str, data: Json) -> None:
        """Message events reach the bot only where it can see the channel."""
        channel = self.channels.get(int(data["channel_id"]))
        if channel is None or channel.guild_id in self.outages:
            return  # an unavailable guild sends no events until its GUILD_CREATE
        if channel.guild_id is not None and not self.permissions(self.bot.id, channel) & VIEW_CHANNEL:
            return
        self.dispatcher(event, data, channel.guild_id)
