"""Who ingest must not log or name: people who opted out where a message was written (the
database's list, cached per guild) and people whose erasure is running or has just committed
(their fences, bot/gateway/erasure_order.py). Checked when a message is written, not when it is
queued, so an opt-out or an erasure applies to messages still waiting in the queue."""

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

    async def refuses(self, message: discord.Message) -> bool:
        """Whether ``message`` must not be logged: its author (in a DM: the person it is with)
        opted out, or is being erased (or was, after the message was written)."""
        me = self.bot.user
        if self.fences.refuses(message, me.id if me is not None else None):
            return True
        return await self._opted_out(message)

    async def hidden(self, message: discord.Message) -> set[int]:
        """People a new line must not name: those opted out where the message was written, and
        those erased after it was written."""
        scope = message.guild.id if message.guild is not None else 0
        return await self._opt_out_set(scope) | self.fences.hidden(message)

    async def refresh(self, guild_id: int | None) -> None:
        """The opt-out list of a guild (None: DMs) changed (/forget-me, /remember-me)."""
        scope = guild_id or 0
        self._opt_outs[scope] = await self.engine.opted_out(guild_id or None)

    async def _opted_out(self, message: discord.Message) -> bool:
        me = self.bot.user
        person: Any = message.author
        if message.guild is None:
            # A DM is about the person in it: the bot's replies go when they opted out.
            if me is not None and person.id == me.id:
                person = getattr(message.channel, "recipient", None)
            return person is not None and person.id in await self._opt_out_set(0)
        opted = await self._opt_out_set(message.guild.id)
        if me is not None and person.id == me.id:
            # The bot's answer to someone who opted out is about them: not logged either.
            ref = message.reference
            replied = ref.resolved if ref is not None else None
            return isinstance(replied, discord.Message) and replied.author.id in opted
        return person.id in opted

    async def _opt_out_set(self, scope: int) -> set[int]:
        if scope not in self._opt_outs:
            self._opt_outs[scope] = await self.engine.opted_out(scope or None)
        return self._opt_outs[scope]
