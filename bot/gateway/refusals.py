"""Who ingest must not log or name: people who opted out where a message was written and
people whose erasure is running or has just committed (their fences, bot/gateway/erasure_order.py).
Checked when a message is written, not when it is queued, so an opt-out or an erasure applies to
messages still waiting in the queue: the fences here, right before the write; the opt-outs by the
engine, inside the append's own transaction (MemoryEngine.append_from_discord), given the person
each message is :meth:`about <Refusals.about>`. The names a new line must not show come from the
opt-out list cached per guild, refreshed on /forget-me and /remember-me."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import discord

from bot.gateway.fences import Fences
from memory import MemoryEngine


class Refusals:
    def __init__(self, bot: discord.Client, engine: MemoryEngine, discord_now: Callable[[], int]) -> None:
        self.bot, self.engine = bot, engine
        self.fences = Fences(discord_now)
        self._opt_outs: dict[int, set[int]] = {}

    def fenced(self, message: discord.Message) -> bool:
        """Whether ``message``'s author (in a DM: the person it is with) is being erased, or was
        after the message was written."""
        me = self.bot.user
        return self.fences.refuses(message, me.id if me is not None else None)

    def about(self, message: discord.Message) -> int | None:
        """The person whose opt-out keeps ``message`` out of the log: its author; for the bot's
        own words, the person they answer (a DM is about the person in it); None: nobody."""
        me = self.bot.user
        person: Any = message.author
        if me is None or person.id != me.id:
            return int(person.id)
        if message.guild is None:
            recipient = getattr(message.channel, "recipient", None)
            return recipient.id if recipient is not None else None
        ref = message.reference
        replied = ref.resolved if ref is not None else None
        return replied.author.id if isinstance(replied, discord.Message) else None

    async def hidden(self, message: discord.Message) -> set[int]:
        """People a new line must not name: those opted out where the message was written, and
        those erased after it was written."""
        scope = message.guild.id if message.guild is not None else 0
        return await self._opt_out_set(scope) | self.fences.hidden(message)

    async def refresh(self, guild_id: int | None) -> None:
        """The opt-out list of a guild (None: DMs) changed (/forget-me, /remember-me)."""
        scope = guild_id or 0
        self._opt_outs[scope] = await self.engine.opted_out(guild_id or None)

    async def _opt_out_set(self, scope: int) -> set[int]:
        if scope not in self._opt_outs:
            self._opt_outs[scope] = await self.engine.opted_out(scope or None)
        return self._opt_outs[scope]
