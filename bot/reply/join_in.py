"""Joining in unasked, in a server's join-in channels (docs/design.md, join-in channels; the
check itself: bot/core/join_in.py).

A message that does not address Eva is answered like a trigger only when, in this order (the
cheap refusals first, so most messages cost nothing):

1. it is in a server (never in a DM) and from a person, not a bot;
2. it reads like a question or a request (:func:`may_be_asking`, no model call);
3. its channel, or a thread's channel, is listed with /settings join-in (none by default);
4. its author has not opted out of this server's memory (an opted-out person is never answered
   unasked: joining in reads the chat's memory about them);
5. the channel's cooldown is over: one unprompted reply per JOIN_IN_COOLDOWN, the time kept in
   the database (rate_marks), so a restart or a second process does not reset it;
6. the reply gate admits it in silence (paused, listen-only, blocked, the budgets: a refusal
   says nothing, since nobody asked), and the monthly reply cap is not reached;
7. the check (one call to COMPACT_MODEL over the newest lines of the chat) says yes; the call
   is recorded in the usage ledger as kind "join_in", so it counts against every budget;
8. the channel's cooldown is claimed (one statement: of two processes only one wins).
"""

from __future__ import annotations

from datetime import timedelta

import discord
import structlog
from discord.ext import commands

from bot.core.join_in import check_request, may_be_asking, says_yes
from bot.gateway.chats import chat_for_channel, is_dm
from bot.gateway.running import ingest_of
from bot.policy import policy_of
from bot.reply.gate import ReplyGate
from bot.reply.limits import over_monthly_cap
from bot.services import Services
from memory import JOIN_IN_MARK
from memory.claude import ClaudeError, create_message, message_text, usage_from_response
from memory.policy.guild_policy import joins_in

log = structlog.get_logger(__name__)

FLUSH_TIMEOUT = 5.0  # seconds to wait for ingest to log the message the check reads


class JoinIn:
    def __init__(self, bot: commands.Bot, services: Services, gate: ReplyGate) -> None:
        self.bot, self.services, self.gate = bot, services, gate
        self.cooldown = timedelta(seconds=services.settings.join_in_cooldown)

    async def consider(self, message: discord.Message) -> bool:
        """True when Eva answers ``message`` unasked (the channel's cooldown is then claimed)."""
        guild, channel = message.guild, message.channel
        if guild is None or is_dm(channel) or message.author.bot or not may_be_asking(message.content):
            return False
        parent_id = channel.parent_id if isinstance(channel, discord.Thread) else None
        engine, ids = self.services.engine, {"channel_id": channel.id, "message_id": message.id}
        try:
            if not joins_in(await policy_of(self.services, guild.id), channel.id, parent_id):
                return False
            if message.author.id in await engine.opted_out(guild.id):
                return False
            if await engine.mark_wait(JOIN_IN_MARK, channel.id, self.cooldown) > 0:
                log.info("join_in.cooling_down", **ids)
                return False
            if not (await self.gate.check(message, unprompted=True)).admitted:
                return False
            now, cap = self.services.clock.now(), self.services.settings.guild_monthly_reply_cap
            if await over_monthly_cap(engine, cap=cap, guild_id=guild.id, now=now):
                return False
            chat_id = await chat_for_channel(self.bot, channel, message.author)
            if chat_id is None:
                return False
            if not await self._check(chat_id, guild.id, ids):
                return False
            claimed = await engine.claim_mark(JOIN_IN_MARK, channel.id, self.cooldown)
        except Exception as exc:  # the database is down: stay quiet, nobody asked
            log.warning("join_in.failed", **ids, error=type(exc).__name__)
            return False
        log.info("join_in.joined" if claimed else "join_in.cooldown_lost", **ids)
        return claimed

    async def _check(self, chat_id: int, guild_id: int, ids: dict[str, int]) -> bool:
        """The model's yes or no over the newest lines of the chat (its trigger among them)."""
        ingest, engine, settings = ingest_of(self.bot), self.services.engine, self.services.settings
        if ingest is not None:
            await ingest.flush(chat_id, timeout=FLUSH_TIMEOUT)
        view = await engine.prompt_view(chat_id)
        if not view.tail_lines:
            return False
        request = check_request(settings.compact_model, settings.bot_name, view.tail_lines)
        try:
            response = await create_message(self.services.claude, **request)
        except ClaudeError as exc:
            log.warning("join_in.check_failed", **ids, reason=str(exc))
            return False
        await engine.record_usage(
            chat_id=chat_id,
            guild_id=guild_id,
            kind="join_in",
            model=settings.compact_model,
            usages=[usage_from_response(response)],
            prices=self.services.prices,
        )
        yes = says_yes(message_text(response))
        log.info("join_in.checked", **ids, yes=yes)
        return yes
