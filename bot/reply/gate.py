"""The per-server and spending gate of a reply turn, called from one place in the reply cog.

It turns a triggering Discord message into plain ids, asks the pure rules in
memory/policy/guild_policy.py, and reads the ledger for the money. Refusals for *who* or *where*
(paused channel, listen-only, unlisted channel, name trigger off, blocked or not allowed) are
silent and cost no database read of the ledger. Refusals for *money* say so once:

- a server's monthly budget: at 80%, or earlier once the month's pace forecasts the budget
  crossed (memory/policy/guild_policy.py ``forecast``, from the 3rd day), the admins are warned
  once a month (in the alert channel
  set with /settings budget, else by a DM to the server's owner); at 100% replies pause, and
  the first refused trigger of the month gets one short notice in its channel;
- the host-wide MONTHLY_BUDGET_USD: every server and DM together; one notice per chat a month;
- DMs: DM_DAILY_REPLY_CAP replies per person a day, and all DMs together at most
  DM_BUDGET_SHARE of the host-wide budget; one notice per person a day / a month.

When the database cannot be read the gate refuses with the short "something went wrong" note
(once a minute per person) and logs ``reply.failed``: a block list that cannot be read must not
let a blocked person reach the model, and the turn could not read its memory anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import discord
import structlog

from bot.gateway.chats import is_dm
from bot.policy import policy_of, store_of
from bot.reply.limits import SOMETHING_BROKE_NOTE
from bot.services import Services
from memory import GuildSettingsStore
from memory.policy.guild_policy import (
    Asker,
    BudgetLevel,
    Forecast,
    Policy,
    budget_level,
    day_start,
    dm_budget,
    month_key,
    refusal,
)

log = structlog.get_logger(__name__)

BUDGET_PAUSED_NOTE = (
    "I've spent this server's budget for the month, so I'll stay quiet until the 1st."
    " (An admin can raise it with /settings budget.)"
)
BUDGET_WARNING = (
    "Heads-up for the admins of {guild}: I've spent ${spent} of this month's ${budget} budget"
    " ({percent}%), {forecast}. At 100% I stop replying until the 1st; /settings budget changes"
    " the budget."
)
HOST_BUDGET_NOTE = "My host's budget for this month is used up, so I'll stay quiet until the 1st."
DM_CAP_NOTE = "That's all the replies I can give you today ({cap}); let's talk again tomorrow!"
DM_BUDGET_NOTE = "I've used up this month's budget for direct messages; see you on the 1st (or in a server)."


@dataclass(frozen=True, slots=True)
class Verdict:
    admitted: bool
    note: str | None = None  # to send as a reply to the trigger


REFUSED = Verdict(False)
ADMITTED = Verdict(True)


def asker_of(message: discord.Message, my_id: int, *, unprompted: bool = False) -> Asker:
    author = message.author
    roles = frozenset(role.id for role in getattr(author, "roles", ()))
    channel = message.channel
    parent_id = channel.parent_id if isinstance(channel, discord.Thread) else None
    return Asker(
        author_id=author.id,
        role_ids=roles,
        channel_id=channel.id,
        parent_id=parent_id,
        by_name_only=not unprompted and not addressed_directly(message, my_id),
        unprompted=unprompted,
    )


def addressed_directly(message: discord.Message, my_id: int) -> bool:
    """A mention of the bot or its managed role, or a reply to one of its messages."""
    if any(user.id == my_id for user in message.mentions):
        return True
    if any(role.tags is not None and role.tags.bot_id == my_id for role in message.role_mentions):
        return True
    ref = message.reference
    if ref is None:
        return False
    replied = ref.resolved if isinstance(ref.resolved, discord.Message) else ref.cached_message
    return replied is not None and replied.author.id == my_id


class ReplyGate:
    def __init__(self, bot: discord.Client, services: Services) -> None:
        self.bot, self.services, self.settings = bot, services, services.settings
        self._noted: set[tuple[str, int, str]] = set()  # (kind, scope, period): notes said once

    @property
    def store(self) -> GuildSettingsStore:
        return store_of(self.services)

    async def model_for(self, guild_id: int | None) -> str:
        if guild_id is None:
            return self.settings.reply_model
        try:
            return (await policy_of(self.services, guild_id)).model
        except Exception as exc:  # the turn's own reads will fail and say so
            log.warning("reply.settings_read_failed", guild_id=guild_id, error=type(exc).__name__)
            return self.settings.reply_model

    async def timezone_for(self, guild_id: int | None) -> str:
        """The server's time zone (/settings timezone), for a turn that reads no memory."""
        if guild_id is None:
            return self.settings.timezone
        try:
            return (await policy_of(self.services, guild_id)).timezone
        except Exception as exc:  # the time in the note is the host's then; nothing else changes
            log.warning("reply.settings_read_failed", guild_id=guild_id, error=type(exc).__name__)
            return self.settings.timezone

    async def check(self, message: discord.Message, *, unprompted: bool = False) -> Verdict:
        """``unprompted``: a message nobody addressed to Eva, in a join-in channel; refused in
        silence (no budget notice spent on it), and never in a DM."""
        ids = {"channel_id": message.channel.id, "user_id": message.author.id}
        try:
            if is_dm(message.channel):
                return REFUSED if unprompted else await self._check_dm(message)
            return await self._check_guild(message, unprompted)
        except Exception as exc:
            log.error("reply.failed", stage="admission", **ids, error=type(exc).__name__)
            now = self.services.clock.now()  # one apology per person a minute, not one per mention
            return self._once("unreadable", message.author.id, f"{now:%Y-%m-%d %H:%M}", SOMETHING_BROKE_NOTE)

    async def may_spend_unasked(self, guild_id: int | None) -> bool:
        """Whether money may go on something nobody asked for (a keep-warm ping): the server's
        budget below its warning level, by spend and by forecast (a DM: under 80% of the DMs'
        share), and the host's budget below its warning level too. Silent: no notice, nothing
        marked."""
        settings, now = self.settings, self.services.clock.now()
        if guild_id is not None:
            _, level = await self._guild_budget(guild_id, await policy_of(self.services, guild_id), now)
            if level is not BudgetLevel.OK:
                return False
        else:
            share = dm_budget(self._host_budget(), settings.dm_budget_share)
            spent = await self.store.dm_spent(now, settings.timezone) if share is not None else Decimal(0)
            if budget_level(spent, share) is not BudgetLevel.OK:
                return False
        host = self._host_budget()
        if host is None:
            return True
        projection = await self.store.host_forecast(now, settings.timezone)
        return budget_level(projection.spent, host, projection) is BudgetLevel.OK

    async def _check_guild(self, message: discord.Message, unprompted: bool = False) -> Verdict:
        me = self.bot.user
        guild = message.guild
        if me is None or guild is None:
            return REFUSED
        chat = await self.services.engine.chat_by_discord_id(message.channel.id)
        policy = await policy_of(self.services, guild.id)
        asker = asker_of(message, me.id, unprompted=unprompted)
        why = refusal(policy, asker, paused=chat is not None and chat.paused)
        if why is not None:
            log.info("reply.refused", guild_id=guild.id, channel_id=message.channel.id,
                     user_id=message.author.id, reason=why.value)  # fmt: skip
            return REFUSED
        now = self.services.clock.now()
        month = month_key(now, policy.timezone)
        projection, level = await self._guild_budget(guild.id, policy, now)
        if level is BudgetLevel.OVER and unprompted:
            return REFUSED
        if level is BudgetLevel.OVER:
            log.info("reply.budget_paused", guild_id=guild.id, user_id=message.author.id)
            first = await self.store.mark_month(guild.id, "budget_paused_month", month)
            return Verdict(False, BUDGET_PAUSED_NOTE if first else None)
        if level is BudgetLevel.WARN and await self.store.mark_month(guild.id, "budget_warned_month", month):
            assert policy.monthly_budget_usd is not None
            await self._warn_admins(guild, policy, projection)
        host_budget = self._host_budget()
        if unprompted and host_budget is not None:  # the host's budget, in silence
            host_spent = await self.store.host_spent(now, self.settings.timezone)
            return REFUSED if host_spent >= host_budget else ADMITTED
        return await self._check_host(guild.id, now)

    async def _guild_budget(
        self, guild_id: int, policy: Policy, now: datetime
    ) -> tuple[Forecast, BudgetLevel]:
        """The server's month so far and its forecast, and where that stands against its budget."""
        projection = await self.store.guild_forecast(guild_id, now, policy.timezone)
        return projection, budget_level(projection.spent, policy.monthly_budget_usd, projection)

    async def _check_dm(self, message: discord.Message) -> Verdict:
        settings, now = self.settings, self.services.clock.now()
        user_id = message.author.id
        chat = await self.services.engine.chat_by_discord_id(message.channel.id)
        day = day_start(now, settings.timezone).date().isoformat()
        if settings.dm_daily_reply_cap > 0 and chat is not None:
            used = await self.store.replies_today(chat.id, now, settings.timezone)
            if used >= settings.dm_daily_reply_cap:
                log.info("reply.dm_daily_cap", user_id=user_id)
                return self._once("dm_cap", user_id, day, DM_CAP_NOTE.format(cap=settings.dm_daily_reply_cap))
        share = dm_budget(self._host_budget(), settings.dm_budget_share)
        if share is not None and await self.store.dm_spent(now, settings.timezone) >= share:
            log.info("reply.dm_budget", user_id=user_id)
            return self._once("dm_budget", user_id, month_key(now, settings.timezone), DM_BUDGET_NOTE)
        return await self._check_host(message.channel.id, now)

    async def _check_host(self, scope: int, now: Any) -> Verdict:
        budget = self._host_budget()
        if budget is None:
            return ADMITTED
        if await self.store.host_spent(now, self.settings.timezone) >= budget:
            log.info("reply.host_budget", scope=scope)
            return self._once("host", scope, month_key(now, self.settings.timezone), HOST_BUDGET_NOTE)
        return ADMITTED

    def _host_budget(self) -> Decimal | None:
        value = self.settings.monthly_budget_usd
        return Decimal(str(value)) if value is not None and value > 0 else None

    def _once(self, kind: str, scope: int, period: str, note: str) -> Verdict:
        key = (kind, scope, period)
        if key in self._noted:
            return REFUSED
        self._noted.add(key)
        return Verdict(False, note)

    async def _warn_admins(self, guild: discord.Guild, policy: Policy, projection: Forecast) -> None:
        budget, spent = policy.monthly_budget_usd, projection.spent
        assert budget is not None
        text = BUDGET_WARNING.format(
            guild=guild.name, spent=f"{spent:.2f}", budget=f"{budget:.2f}", percent=int(spent * 100 / budget),
            forecast=projection.describe(),
        )  # fmt: skip
        mentions = discord.AllowedMentions.none()
        try:
            channel = self.bot.get_channel(policy.alert_channel_id) if policy.alert_channel_id else None
            if isinstance(channel, discord.abc.Messageable):
                await channel.send(text, allowed_mentions=mentions)
                where = "alert_channel"
            else:
                owner = guild.owner or await self.bot.fetch_user(guild.owner_id or 0)
                await owner.send(text, allowed_mentions=mentions)
                where = "owner_dm"
            log.info("reply.budget_warning", guild_id=guild.id, sent_to=where)
        except discord.HTTPException as exc:
            log.warning("reply.budget_warning_failed", guild_id=guild.id, status=exc.status, code=exc.code)
