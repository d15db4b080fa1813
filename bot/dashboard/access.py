"""Who may see which dashboard page: sessions opened by a one-time link, and the check every
request makes again (docs/security.md, the dashboard).

A session is bound to what its link was for: one member and one server (`/memory dashboard`),
or the host (`eva dashboard-link`, every server, DMs as counts only). A member's session is
worth nothing on its own: every request asks the gateway's cache again whether that member is
still in that server with Manage Server, so a member who leaves or loses the permission is
out at their next click. Sessions live in this process (a restart signs everyone out); only
the links are in the database, hashed, because `eva dashboard-link` runs in another process.
"""

from __future__ import annotations

import enum
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import discord

SESSION_SECONDS = 8 * 3600  # a working day; a new link is one slash command away
SESSION_BYTES = 32


@dataclass(frozen=True, slots=True)
class Session:
    key: str  # the cookie's value
    csrf: str  # the token every form of this session carries
    guild_id: int | None  # None: the host
    user_id: int | None  # None: the host
    expires: float  # time.monotonic()

    @property
    def host(self) -> bool:
        return self.guild_id is None


class Verdict(enum.Enum):
    ALLOWED = "allowed"
    SIGNED_OUT = "signed out"  # no session, or an expired one: go and sign in
    OTHER_SERVER = "other server"  # a session for another server's pages
    NOT_MANAGER = "not a manager"  # no longer in the server, or without Manage Server
    HOST_ONLY = "host only"


# (guild id, user id) -> whether that member is in that server with Manage Server, now.
Manages = Callable[[int, int], bool]


def manages_in_cache(client: discord.Client) -> Manages:
    """The gateway cache's answer: no guild, no member or no Manage Server is no."""

    def manages(guild_id: int, user_id: int) -> bool:
        guild = client.get_guild(guild_id)
        member = guild.get_member(user_id) if guild is not None else None
        return member is not None and member.guild_permissions.manage_guild

    return manages


# May member ``user`` of ``guild`` read channel ``channel`` (None: a chat without one)?
ReadsChannel = Callable[[int, int, int | None], bool]


def reads_channel_in_cache(client: discord.Client) -> ReadsChannel:
    """The gateway cache's answer, as `/memory` asks it (bot/commands/admin.py): View Channel
    and Read Message History in that channel or thread. Manage Server alone does not show a
    private channel's memory; a channel the cache does not know (deleted, or an import's label)
    is no."""

    def reads(guild_id: int, user_id: int, channel_id: int | None) -> bool:
        guild = client.get_guild(guild_id)
        member = guild.get_member(user_id) if guild is not None else None
        channel = guild.get_channel_or_thread(channel_id) if guild and channel_id else None
        if member is None or channel is None:
            return False
        perms = channel.permissions_for(member)
        return bool(perms.view_channel and perms.read_message_history)

    return reads


def verdict(session: Session | None, guild_id: int | None, manages: Manages) -> Verdict:
    """May ``session`` open a page of ``guild_id`` (None: a host page)? Pure, given ``manages``."""
    if session is None:
        return Verdict.SIGNED_OUT
    if session.host:
        return Verdict.ALLOWED
    if guild_id is None:
        return Verdict.HOST_ONLY
    if session.guild_id != guild_id:
        return Verdict.OTHER_SERVER
    assert session.user_id is not None
    if not manages(guild_id, session.user_id):
        return Verdict.NOT_MANAGER
    return Verdict.ALLOWED


def csrf_ok(session: Session, sent: str | None) -> bool:
    """The form's token is this session's (compared in constant time)."""
    return sent is not None and hmac.compare_digest(session.csrf.encode(), sent.encode())


class Sessions:
    """The open sessions of this process, by cookie value."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._open: dict[str, Session] = {}
        self._clock = clock

    def open(self, guild_id: int | None, user_id: int | None) -> Session:
        self._sweep()
        session = Session(
            secrets.token_urlsafe(SESSION_BYTES),
            secrets.token_urlsafe(SESSION_BYTES),
            guild_id,
            user_id,
            self._clock() + SESSION_SECONDS,
        )
        self._open[session.key] = session
        return session

    def find(self, key: str | None) -> Session | None:
        session = self._open.get(key or "")
        if session is None or session.expires <= self._clock():
            return None
        return session

    def close(self, key: str) -> None:
        self._open.pop(key, None)

    def _sweep(self) -> None:
        now = self._clock()
        for key in [k for k, s in self._open.items() if s.expires <= now]:
            del self._open[key]
