"""Names for the ids a Discord message mentions, for memory/text/mentions.py to render.

Where a name comes from, cheapest first: the message's resolved mentions (Discord sends the
mentioned users and members with the message; discord.py resolves mentioned roles from the
guild's cache), then the guild's cache, then one REST lookup, else the raw ``<@id>`` stays.

Channel names follow what the people in the chat can see: a channel of another guild, or one
that @everyone cannot view (a private channel, a private thread), is not named in another
channel's memory; its raw form stays (Discord's own client shows "No Access" there).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import discord
import structlog

from memory.text.mentions import MentionNames, Rendered, Wanted, render_mentions, wanted

log = structlog.get_logger(__name__)

# REST lookups per message: a message that mentions many unknown ids must not stall ingest
# (each call is a round trip of ~100 ms and counts against Discord's rate limits).
REST_PER_MESSAGE = 3
# Ids REST could not name (deleted, no access) are not asked again: 1,024 ids x ~50 bytes.
UNKNOWN_REMEMBERED = 1024

Key = tuple[str, int]  # ("member" | "user" | "channel" | "role", id)


class MentionLookup:
    """Renders a message's mentions as names (one per bot; remembers failed REST lookups)."""

    def __init__(self, bot: discord.Client, rest_per_message: int = REST_PER_MESSAGE) -> None:
        self.bot, self.rest_per_message = bot, rest_per_message
        self._unknown: OrderedDict[Key, None] = OrderedDict()
        self.rest_calls = 0

    async def render(self, message: discord.Message, content: str, hidden: Iterable[int] = ()) -> Rendered:
        """``content`` (the message's visible text) with names for its mentions; ``hidden``:
        people never to be named (opted out)."""
        return render_mentions(content, await self.lookup(message, content, hidden))

    async def lookup(
        self, message: discord.Message, content: str, hidden: Iterable[int] = ()
    ) -> MentionNames:
        """What the ids ``content`` mentions are called, for the memory to render (an edit is
        rendered there, under the row's lock: memory/privacy/erase.py)."""
        ids = wanted(content)
        if not ids:
            return MentionNames(hidden=frozenset(hidden))
        return await self.names(message, ids, frozenset(hidden))

    async def names(self, message: discord.Message, ids: Wanted, hidden: frozenset[int]) -> MentionNames:
        guild = message.guild
        sources = [message, *getattr(message, "message_snapshots", ())]
        users: dict[int, str] = {}
        roles: dict[int, str] = {}
        for source in sources:
            for person in getattr(source, "mentions", ()):
                users.setdefault(person.id, person.display_name)
            for role in getattr(source, "role_mentions", ()):
                roles.setdefault(role.id, role.name)
        channels: dict[int, str] = {}
        budget = [self.rest_per_message]
        for person in ids.users:
            if person not in users and person not in hidden:
                name = await self._user(guild, person, budget)
                if name:
                    users[person] = name
        for role_id in ids.roles:
            if role_id not in roles:
                name = await self._role(guild, role_id, budget)
                if name:
                    roles[role_id] = name
        for channel_id in ids.channels:
            name = await self._channel(message, channel_id, budget)
            if name:
                channels[channel_id] = name
        return MentionNames(users=users, channels=channels, roles=roles, hidden=hidden)

    # --- one kind of id each: cache, then REST (within the budget), else None
    async def _user(self, guild: discord.Guild | None, user_id: int, budget: list[int]) -> str | None:
        cached: discord.abc.User | None = guild.get_member(user_id) if guild is not None else None
        if cached is None:
            cached = self.bot.get_user(user_id)
        if cached is not None:
            return cached.display_name
        if guild is not None:
            member = await self._rest(("member", user_id), budget, guild.fetch_member(user_id))
            if member is not None:
                return str(member.display_name)
        found = await self._rest(("user", user_id), budget, self.bot.fetch_user(user_id))
        return str(found.display_name) if found is not None else None

    async def _role(self, guild: discord.Guild | None, role_id: int, budget: list[int]) -> str | None:
        if guild is None:
            return None
        role = guild.get_role(role_id)
        if role is None:
            fetched = await self._rest(("role", role_id), budget, guild.fetch_roles())
            role = next((r for r in fetched or () if r.id == role_id), None)
        return role.name if role is not None else None

    async def _channel(self, message: discord.Message, channel_id: int, budget: list[int]) -> str | None:
        guild = message.guild
        if guild is None:
            return None
        channel: Any = guild.get_channel_or_thread(channel_id)
        if channel is None:
            channel = await self._rest(("channel", channel_id), budget, self.bot.fetch_channel(channel_id))
        if channel is None or getattr(channel, "guild", None) is None or channel.guild.id != guild.id:
            return None
        here = message.channel
        if channel_id in (here.id, getattr(here, "parent_id", None)) or _public(channel, guild):
            return str(channel.name)
        return None

    async def _rest(self, key: Key, budget: list[int], call: Any) -> Any:
        """``await call`` unless this id failed before or the message's budget is spent;
        None on a failure (not found, no access, Discord down: the raw form stays)."""
        if key in self._unknown or budget[0] <= 0:
            call.close()  # never awaited: no "coroutine was never awaited" warning
            return None
        budget[0] -= 1
        self.rest_calls += 1
        try:
            return await call
        except (discord.NotFound, discord.Forbidden):
            self._unknown[key] = None
            while len(self._unknown) > UNKNOWN_REMEMBERED:
                self._unknown.popitem(last=False)
        except discord.HTTPException as exc:
            log.info("mentions.lookup_failed", kind=key[0], status=exc.status)
        return None


def _public(channel: Any, guild: discord.Guild) -> bool:
    """Whether everyone in the guild can see the channel (so its name is no secret)."""
    if isinstance(channel, discord.Thread) and channel.is_private():
        return False
    try:
        return bool(channel.permissions_for(guild.default_role).view_channel)
    except (AttributeError, discord.ClientException):
        return False
