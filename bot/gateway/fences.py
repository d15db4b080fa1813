"""The fences ingest respects (bot/gateway/erasure_order.py raises and closes them): while a
person's erasure runs, their messages in its scope are refused and they are not named; once it
committed, only what was created before its moment is refused, for FENCE_KEEP_SECONDS more.
Checked right before each write (bot/gateway/refusals.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import discord

# A gateway session can be resumed for a few minutes after it dropped, and a RESUME replays
# the events missed meanwhile: a fence outlives its erasure by 15 minutes of Discord's clock
# (the newest snowflake ingest has seen: our own clocks may jump, or be simulated in tests).
FENCE_KEEP_SECONDS = 900.0
_TIMESTAMP_SHIFT = 22  # a snowflake's milliseconds since Discord's epoch sit above 22 bits


def snowflake_after(snowflake: int, seconds: float) -> int:
    """The smallest snowflake of the millisecond ``seconds`` after ``snowflake``'s."""
    milliseconds = (snowflake >> _TIMESTAMP_SHIFT) + max(int(seconds * 1000), 0)
    return milliseconds << _TIMESTAMP_SHIFT


@dataclass(eq=False)
class Fence:
    """One person's erasure in a guild (``guild_id`` None: their direct messages)."""

    guild_id: int | None
    person_id: int
    before: int | None = None  # None while the erasure runs: all their messages are refused
    kept_until: int | None = None  # a snowflake (Discord's clock); None while it runs
    held_back: dict[int, int] = field(default_factory=dict)  # channel -> oldest message refused

    def in_scope(self, message: discord.Message) -> bool:
        if message.guild is not None:
            return message.guild.id == self.guild_id
        return self.guild_id is None

    def older(self, message: discord.Message) -> bool:
        return self.before is None or message.id < self.before

    def covers(self, message: discord.Message, bot_id: int | None) -> bool:
        """Whether ``message`` is theirs and older than the erasure: in a DM, the bot's side
        of their DM too (the whole DM memory goes)."""
        if not (self.in_scope(message) and self.older(message)):
            return False
        if message.author.id == self.person_id:
            return True
        if message.guild is None and bot_id is not None and message.author.id == bot_id:
            recipient = getattr(message.channel, "recipient", None)
            return recipient is not None and recipient.id == self.person_id
        return False


class Fences:
    """The erasures ingest must respect now (in memory only: their floors are in the database)."""

    def __init__(self, discord_now: Callable[[], int] = lambda: 0) -> None:
        self._fences: list[Fence] = []
        self._discord_now = discord_now  # the newest snowflake seen

    def add(self, fence: Fence) -> Fence:
        self._prune()
        self._fences.append(fence)
        return fence

    def remove(self, fence: Fence) -> None:
        with contextlib.suppress(ValueError):
            self._fences.remove(fence)

    def close(self, fence: Fence, before: int) -> None:
        """The erasure committed: from now on only messages older than ``before`` are refused."""
        fence.before = before
        fence.kept_until = snowflake_after(before, FENCE_KEEP_SECONDS)

    def refuses(self, message: discord.Message, bot_id: int | None) -> bool:
        """Whether ``message`` must not be logged; the refusal is noted (to give it back if the
        erasure fails)."""
        refused = False
        for fence in self._live():
            if fence.covers(message, bot_id):
                refused = True
                if fence.before is None:
                    channel = message.channel.id
                    fence.held_back[channel] = min(fence.held_back.get(channel, message.id), message.id)
        return refused

    def hidden(self, message: discord.Message) -> set[int]:
        """People ``message`` must not name (it was written before their erasure)."""
        return {f.person_id for f in self._live() if f.in_scope(message) and f.older(message)}

    def narrow(self, guild_id: int | None, person_id: int, before: int) -> None:
        """The person asked for something after their erasure (/remember-me): what they
        write from ``before`` on is surely written after it."""
        for fence in self._live():
            if (fence.guild_id, fence.person_id) == (guild_id, person_id) and fence.before is not None:
                fence.before = min(fence.before, before)

    def _live(self) -> list[Fence]:
        self._prune()
        return list(self._fences)

    def _prune(self) -> None:
        now = self._discord_now()
        self._fences = [f for f in self._fences if f.kept_until is None or f.kept_until > now]
