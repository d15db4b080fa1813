"""Data model of the fake Discord: snowflakes, users, guilds, channels, permissions, message store.

Payload builders here produce the JSON shapes discord.py 2.7.1 parses (state.py, guild.py,
channel.py, member.py, threads.py); only fields it reads or that tests care about are filled.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Json = dict[str, Any]

DISCORD_EPOCH_MS = 1420070400000
# Snowflake layout: 42 bits of ms since the Discord epoch, then 22 bits (worker, process, increment).
TIMESTAMP_SHIFT = 22

# Channel types (Discord docs "Channel Object").
GUILD_TEXT = 0
DM = 1
PUBLIC_THREAD = 11

# Permission bits used by the fake (Discord docs "Permissions").
CREATE_INSTANT_INVITE = 1 << 0
ADMINISTRATOR = 1 << 3
MANAGE_CHANNELS = 1 << 4
MANAGE_GUILD = 1 << 5
ADD_REACTIONS = 1 << 6
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
MANAGE_MESSAGES = 1 << 13
EMBED_LINKS = 1 << 14
ATTACH_FILES = 1 << 15
READ_MESSAGE_HISTORY = 1 << 16
USE_EXTERNAL_EMOJIS = 1 << 18
USE_APPLICATION_COMMANDS = 1 << 31
CREATE_PUBLIC_THREADS = 1 << 35
SEND_MESSAGES_IN_THREADS = 1 << 38
ALL_PERMISSIONS = (1 << 51) - 1
# What a fresh server's @everyone role can do (the permissions relevant to a chat bot).
DEFAULT_EVERYONE_PERMISSIONS = (
    CREATE_INSTANT_INVITE
    | ADD_REACTIONS
    | VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | USE_EXTERNAL_EMOJIS
    | USE_APPLICATION_COMMANDS
    | CREATE_PUBLIC_THREADS
    | SEND_MESSAGES_IN_THREADS
)

# Gateway intent bits the fake checks (Discord docs "Gateway Intents").
INTENT_GUILDS = 1 << 0
INTENT_GUILD_MEMBERS = 1 << 1
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_MESSAGE_CONTENT = 1 << 15


class SnowflakeFactory:
    """Issues unique, increasing ids in Discord's snowflake format."""

    def __init__(self) -> None:
        self._last = 0
        self._issued: set[int] = set()

    def next(self) -> int:
        now_ms = int(time.time() * 1000)
        candidate = max((now_ms - DISCORD_EPOCH_MS) << TIMESTAMP_SHIFT, self._last + 1)
        self._last = candidate
        self._issued.add(candidate)
        return candidate

    def on_shard(self, shard_id: int, shard_count: int) -> int:
        """The next id whose guild would be on ``shard_id`` of ``shard_count``: Discord's rule is
        ``(guild_id >> 22) % shard_count``, so the timestamp moves on by at most
        ``shard_count - 1`` milliseconds."""
        candidate = self.next()
        while (candidate >> TIMESTAMP_SHIFT) % shard_count != shard_id:
            candidate = ((candidate >> TIMESTAMP_SHIFT) + 1) << TIMESTAMP_SHIFT
        self._last = candidate
        self._issued.add(candidate)
        return candidate

    def at(self, when: datetime) -> int:
        """An id whose timestamp is `when` (for seeding history in the past)."""
        base = (int(when.timestamp() * 1000) - DISCORD_EPOCH_MS) << TIMESTAMP_SHIFT
        candidate = base
        while candidate in self._issued:
            candidate += 1
        self._issued.add(candidate)
        self._last = max(self._last, candidate)
        return candidate


def snowflake_time(snowflake: int) -> datetime:
    return datetime.fromtimestamp(((snowflake >> TIMESTAMP_SHIFT) + DISCORD_EPOCH_MS) / 1000, tz=UTC)


def iso_time(snowflake: int) -> str:
    return snowflake_time(snowflake).isoformat()


@dataclass
class FakeUser:
    id: int
    username: str
    bot: bool = False
    global_name: str | None = None

    def payload(self) -> Json:
        return {
            "id": str(self.id),
            "username": self.username,
            "discriminator": "0",
            "global_name": self.global_name,
            "avatar": None,
            "bot": self.bot,
            "public_flags": 0,
        }


@dataclass
class FakeRole:
    id: int
    name: str
    permissions: int
    position: int = 0

    def payload(self) -> Json:
        return {
            "id": str(self.id),
            "name": self.name,
            "permissions": str(self.permissions),
            "position": self.position,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
            "flags": 0,
        }


@dataclass
class FakeMember:
    user: FakeUser
    role_ids: list[int]
    joined_id: int  # snowflake whose timestamp is joined_at
    nick: str | None = None

    def payload(self, *, with_user: bool = True) -> Json:
        data: Json = {
            "roles": [str(r) for r in self.role_ids],
            "joined_at": iso_time(self.joined_id),
            "nick": self.nick,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
        }
        if with_user:
            data["user"] = self.user.payload()
        return data


@dataclass
class FakeChannel:
    id: int
    type: int
    name: str = ""
    guild_id: int | None = None
    parent_id: int | None = None
    owner_id: int | None = None  # thread creator
    recipient_id: int | None = None  # DM partner
    position: int = 0
    permission_overwrites: list[Json] = field(default_factory=list)

    @property
    def is_thread(self) -> bool:
        return self.type == PUBLIC_THREAD

    def payload(self, users: dict[int, FakeUser], last_message_id: int | None = None) -> Json:
        last = str(last_message_id) if last_message_id else None
        if self.type == DM:
            recipient = users[self.recipient_id] if self.recipient_id else None
            return {
                "id": str(self.id),
                "type": DM,
                "last_message_id": last,
                "recipients": [recipient.payload()] if recipient else [],
            }
        data: Json = {
            "id": str(self.id),
            "type": self.type,
            "guild_id": str(self.guild_id),
            "name": self.name,
            "position": self.position,
            "parent_id": str(self.parent_id) if self.parent_id else None,
            "last_message_id": last,
            "nsfw": False,
            "rate_limit_per_user": 0,
        }
        if self.is_thread:
            data.update(
                owner_id=str(self.owner_id),
                message_count=0,
                member_count=1,
                thread_metadata={
                    "archived": False,
                    "auto_archive_duration": 1440,
                    "archive_timestamp": iso_time(self.id),
                    "locked": False,
                    "create_timestamp": iso_time(self.id),
                },
            )
        else:
            data.update(topic=None, permission_overwrites=self.permission_overwrites)
        return data


@dataclass
class FakeGuild:
    id: int
    name: str
    owner_id: int
    roles: dict[int, FakeRole] = field(default_factory=dict)
    members: dict[int, FakeMember] = field(default_factory=dict)
    channel_ids: list[int] = field(default_factory=list)
    admin_role_id: int | None = None

    @property
    def everyone(self) -> FakeRole:
        return self.roles[self.id]

    def base_permissions(self, user_id: int) -> int:
        """Guild-level permissions (Discord's 'computeBasePermissions')."""
        if user_id == self.owner_id:
            return ALL_PERMISSIONS
        member = self.members.get(user_id)
        if member is None:
            return 0
        perms = self.everyone.permissions
        for role_id in member.role_ids:
            role = self.roles.get(role_id)
            if role is not None:
                perms |= role.permissions
        return ALL_PERMISSIONS if perms & ADMINISTRATOR else perms

    def channel_permissions(self, user_id: int, channel: FakeChannel) -> int:
        """Base permissions with the channel's overwrites applied (everyone, then roles, then member)."""
        perms = self.base_permissions(user_id)
        if perms & ADMINISTRATOR or perms == ALL_PERMISSIONS:
            return perms
        member = self.members.get(user_id)
        role_ids = set(member.role_ids) if member else set()
        overwrites = channel.permission_overwrites
        for ow in overwrites:
            if int(ow["id"]) == self.id:
                perms = (perms & ~int(ow.get("deny", 0))) | int(ow.get("allow", 0))
        role_allow = role_deny = 0
        for ow in overwrites:
            if ow.get("type", 0) == 0 and int(ow["id"]) in role_ids:
                role_allow |= int(ow.get("allow", 0))
                role_deny |= int(ow.get("deny", 0))
        perms = (perms & ~role_deny) | role_allow
        for ow in overwrites:
            if ow.get("type", 0) == 1 and int(ow["id"]) == user_id:
                perms = (perms & ~int(ow.get("deny", 0))) | int(ow.get("allow", 0))
        return perms


class MessageStore:
    """Messages by id; per channel a sorted id list (ephemeral messages are kept out of history)."""

    def __init__(self) -> None:
        self.by_id: dict[int, Json] = {}
        self.ephemeral_ids: set[int] = set()
        self._channel_ids: dict[int, list[int]] = {}

    def add(self, message: Json, *, ephemeral: bool = False) -> None:
        message_id = int(message["id"])
        self.by_id[message_id] = message
        if ephemeral:
            self.ephemeral_ids.add(message_id)
        else:
            bisect.insort(self._channel_ids.setdefault(int(message["channel_id"]), []), message_id)

    def get(self, message_id: int) -> Json | None:
        return self.by_id.get(message_id)

    def is_ephemeral(self, message_id: int) -> bool:
        return message_id in self.ephemeral_ids

    def remove(self, message_id: int) -> Json | None:
        message = self.by_id.pop(message_id, None)
        if message is None:
            return None
        if message_id in self.ephemeral_ids:
            self.ephemeral_ids.discard(message_id)
            return message
        ids = self._channel_ids.get(int(message["channel_id"]), [])
        index = bisect.bisect_left(ids, message_id)
        if index < len(ids) and ids[index] == message_id:
            del ids[index]
        return message

    def drop_channel(self, channel_id: int) -> None:
        for message_id in self._channel_ids.pop(channel_id, []):
            self.by_id.pop(message_id, None)

    def channel_messages(self, channel_id: int) -> list[Json]:
        """All non-ephemeral messages of a channel, oldest first."""
        return [self.by_id[i] for i in self._channel_ids.get(channel_id, [])]

    def last_id(self, channel_id: int) -> int | None:
        ids = self._channel_ids.get(channel_id)
        return ids[-1] if ids else None

    def history(
        self,
        channel_id: int,
        limit: int = 50,
        before: int | None = None,
        after: int | None = None,
        around: int | None = None,
    ) -> list[Json]:
        """Discord's GET /channels/{c}/messages: newest first; `after` yields the oldest ones after it."""
        ids = self._channel_ids.get(channel_id, [])
        if around is not None:
            pivot = bisect.bisect_left(ids, around)
            newer_count = limit // 2
            newer = ids[pivot : pivot + newer_count + (1 if pivot < len(ids) and ids[pivot] == around else 0)]
            older = ids[max(0, pivot - (limit - len(newer))) : pivot]
            chosen = older + newer
        elif after is not None:
            start = bisect.bisect_right(ids, after)
            end = len(ids) if before is None else bisect.bisect_left(ids, before)
            chosen = ids[start:end][:limit]
        else:
            end = len(ids) if before is None else bisect.bisect_left(ids, before)
            chosen = ids[max(0, end - limit) : end]
        return [self.by_id[i] for i in reversed(chosen)]
