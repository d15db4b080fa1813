"""`/settings ...`: a server's own choices of where Eva replies, who may talk to her, which model
answers, its time zone and its monthly budget (docs/design.md, tools and commands).

Thin: the rules are in memory/policy/guild_policy.py, the storage in memory/policy/guild_settings.py. Like
/memory, the group is guild-only, defaults to Manage Server, and checks that permission again
when a command runs (a server admin can open the default to anyone); answers are ephemeral.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

import discord
import structlog
from discord import app_commands
from discord.ext import commands

from bot.commands.tree import ManagersCog, answer, interaction_ids
from bot.policy import policy_of, store_of
from memory import Changer
from memory.errors import UserFacingError
from memory.policy.guild_policy import BudgetLevel, Forecast, Policy, budget_level, valid_timezone
from memory.text.language import LANGUAGES, valid_language

log = structlog.get_logger(__name__)

ChannelOption = app_commands.AppCommandChannel | app_commands.AppCommandThread
WHERE = {
    "everywhere": "everywhere I can read",
    "channels": "only in the listed channels",
    "nowhere": "nowhere: I only listen (and remember)",
}


def _by(interaction: discord.Interaction) -> Changer:
    """Who changes a setting, for the audit list the dashboard shows."""
    return Changer(interaction.user.id, "slash")


def _ids(prefix: str, ids: frozenset[int]) -> str:
    return ", ".join(f"<{prefix}{i}>" for i in sorted(ids)) or "none"


def describe(
    policy: Policy,
    bot_name: str,
    allowed_models: list[str],
    projection: Forecast,
    join_in_cooldown: float = 600,
) -> str:
    """What /settings show says (pure). A * marks what this server chose itself."""
    cooldown = minutes(join_in_cooldown)

    def star(name: str) -> str:
        return "*" if name in policy.overridden else ""

    where = WHERE[policy.reply_mode]
    if policy.reply_mode == "channels":
        where += f": {_ids('#', policy.reply_channels)}"
    if policy.allow_members or policy.allow_roles:
        who = f"only {_ids('@&', policy.allow_roles)} (roles) and {_ids('@', policy.allow_members)} (members)"
    else:
        who = "everyone"
    if policy.block_members or policy.block_roles:
        who += (
            f"; never {_ids('@&', policy.block_roles)} (roles) or {_ids('@', policy.block_members)} (members)"
        )
    spent = projection.spent
    if policy.monthly_budget_usd is None:
        money = f"no budget; ${spent:.2f} spent this month, {projection.describe()}"
    else:
        percent = int(spent * 100 / policy.monthly_budget_usd)
        money = f"${policy.monthly_budget_usd:.2f} a month; ${spent:.2f} spent this month ({percent}%)"
        if budget_level(spent, policy.monthly_budget_usd) is BudgetLevel.OVER:
            money += ", replies paused until the 1st"
        else:
            money += f", {projection.describe()}"
        alerts = f"<#{policy.alert_channel_id}>" if policy.alert_channel_id else "a DM to the server owner"
        money += f"; the warning (80% spent, or a forecast over the budget) goes to {alerts}"
    joining = _ids("#", policy.join_in_channels) if policy.join_in_channels else "none (off)"
    yes_no = "yes" if policy.reply_to_name else "no"
    lines = [
        "Settings of this server (* = chosen here; the rest are the host's defaults):",
        f"Replies{star('reply_mode')}: {where}.",
        f"My name ({bot_name}) makes me reply{star('reply_to_name')}: {yes_no}"
        " (mentions and replies to me always do).",
        f"I join in unasked (at most once per {cooldown}) in: {joining}.",
        f"Who may talk to me: {who}.",
        f"Model{star('model')}: {policy.model} (the host allows {', '.join(allowed_models)}).",
        f"Time zone{star('timezone')}: {policy.timezone}.",
        f"Budget{star('monthly_budget_usd')}: {money}.",
    ]
    return "\n".join(lines)


def minutes(seconds: float) -> str:
    whole = max(1, round(seconds / 60))
    return f"{whole} minute{'s' if whole != 1 else ''}" if seconds >= 60 else f"{int(seconds)} seconds"


class ServerSettings(ManagersCog):
    settings = app_commands.Group(
        name="settings",
        description="Where I reply, who may talk to me, my model, time zone and budget in this server",
        guild_only=True,
        allowed_contexts=app_commands.AppCommandContext(guild=True),
        default_permissions=discord.Permissions(manage_guild=True),
    )

    async def _changed(self, interaction: discord.Interaction, setting: str, text: str) -> None:
        log.info("settings.changed", setting=setting, **interaction_ids(interaction))
        await answer(interaction, text)

    @settings.command(name="show", description="This server's settings and this month's spending")
    async def show(self, interaction: discord.Interaction) -> None:
        guild_id = interaction.guild_id or 0
        policy = await policy_of(self.services, guild_id)
        projection = await store_of(self.services).guild_forecast(
            guild_id, self.services.clock.now(), policy.timezone
        )
        settings = self.services.settings
        models = settings.reply_models()
        shown = describe(policy, settings.bot_name, models, projection, settings.join_in_cooldown)
        await answer(interaction, shown)

    @settings.command(name="replies", description="Where I reply: everywhere, listed channels, or nowhere")
    @app_commands.describe(where="everywhere I can read, only listed channels, or nowhere (listen only)")
    async def replies(
        self, interaction: discord.Interaction, where: Literal["everywhere", "channels", "nowhere"]
    ) -> None:
        await store_of(self.services).set(interaction.guild_id or 0, by=_by(interaction), reply_mode=where)
        text = f"I now reply {WHERE[where]}."
        if where == "channels":
            policy = await policy_of(self.services, interaction.guild_id or 0)
            text += f" Listed: {_ids('#', policy.reply_channels)} (add some with /settings reply-channel)."
        await self._changed(interaction, "replies", text)

    @settings.command(name="reply-channel", description="Add or remove a channel where I may reply")
    @app_commands.describe(channel="The channel (its threads count too)", listed="True adds, False removes")
    async def reply_channel(
        self, interaction: discord.Interaction, channel: ChannelOption, listed: bool = True
    ) -> None:
        changed = await store_of(self.services).change_list(
            interaction.guild_id or 0, "reply_channels", channel.id, listed, by=_by(interaction)
        )
        state = "on" if listed else "off"
        text = f"{channel.mention} is {'now' if changed else 'already'} {state} the list of reply channels."
        policy = await policy_of(self.services, interaction.guild_id or 0)
        if policy.reply_mode != "channels":
            text += " The list applies once you choose /settings replies where:channels."
        await self._changed(interaction, "reply-channel", text)

    @settings.command(
        name="join-in", description="Add or remove a channel where I may answer questions to the room unasked"
    )
    @app_commands.describe(
        channel="The channel (its threads count too)", listed="True adds, False removes (default: off)"
    )
    async def join_in(
        self, interaction: discord.Interaction, channel: ChannelOption, listed: bool = True
    ) -> None:
        changed = await store_of(self.services).change_list(
            interaction.guild_id or 0, "join_in_channels", channel.id, listed
        )
        every = minutes(self.services.settings.join_in_cooldown)
        if listed:
            text = (
                f"In {channel.mention} I {'now' if changed else 'already'} answer unasked when someone asks"
                f" the room something I can help with, at most once every {every}; never to people who"
                " asked me to forget them. Each check is a small model call, counted in the budget."
            )
        else:
            text = f"In {channel.mention} I {'no longer' if changed else 'already do not'} answer unasked."
        await self._changed(interaction, "join-in", text)

    @settings.command(name="name-trigger", description="Whether my name alone makes me reply")
    @app_commands.describe(enabled="True: saying my name makes me reply; mentions always do")
    async def name_trigger(self, interaction: discord.Interaction, enabled: bool) -> None:
        await store_of(self.services).set(
            interaction.guild_id or 0, by=_by(interaction), reply_to_name=enabled
        )
        name = self.services.settings.bot_name
        text = f"Saying {name} {'now makes me reply' if enabled else 'no longer makes me reply'}."
        await self._changed(interaction, "name-trigger", text)

    @settings.command(name="access", description="Allow or block a role or member from talking to me")
    @app_commands.describe(
        rule="allow: when any allow entry exists, only those; block: never (block wins)",
        role="A role to add to (or remove from) the list",
        member="A member to add to (or remove from) the list",
        remove="True removes the entry instead of adding it",
    )
    async def access(
        self,
        interaction: discord.Interaction,
        rule: Literal["allow", "block"],
        role: discord.Role | None = None,
        member: discord.User | None = None,
        remove: bool = False,
    ) -> None:
        if (role is None) == (member is None):
            raise UserFacingError("Give exactly one role or one member.")
        if role is not None:
            column, target, item = f"{rule}_roles", role.mention, role.id
        else:
            assert member is not None
            column, target, item = f"{rule}_members", member.mention, member.id
        changed = await store_of(self.services).change_list(
            interaction.guild_id or 0, column, item, not remove, by=_by(interaction)
        )
        where = f"the {rule} list"
        if not changed:
            text = f"{target} was {'not on' if remove else 'already on'} {where}."
        else:
            text = f"{'Removed' if remove else 'Added'} {target} {'from' if remove else 'to'} {where}."
        await self._changed(interaction, "access", text)

    @settings.command(name="model", description="Which Claude model writes my replies here")
    @app_commands.describe(name="One of the models the host allows; 'default' for the host's choice")
    async def model(self, interaction: discord.Interaction, name: app_commands.Range[str, 1, 100]) -> None:
        allowed = self.services.settings.reply_models()
        chosen = None if name.strip().lower() == "default" else name.strip()
        if chosen is not None and chosen not in allowed:
            raise UserFacingError(
                f"{name!r} is not a model the host allows; pick one of: {', '.join(allowed)}."
            )
        await store_of(self.services).set(interaction.guild_id or 0, by=_by(interaction), model=chosen)
        effective = chosen or self.services.settings.reply_model
        await self._changed(interaction, "model", f"I now reply with {effective}.")

    @model.autocomplete("name")
    async def model_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        names = [*self.services.settings.reply_models(), "default"]
        return [app_commands.Choice(name=n, value=n) for n in names if current.lower() in n.lower()][:25]

    @settings.command(name="timezone", description="This server's time zone, for the dates in my memory")
    @app_commands.describe(name="An IANA name like Europe/Stockholm; 'default' for the host's")
    async def timezone(self, interaction: discord.Interaction, name: app_commands.Range[str, 1, 64]) -> None:
        if name.strip().lower() == "default":
            zone = None
        else:
            zone = valid_timezone(name)
            if zone is None:
                raise UserFacingError(
                    f"{name!r} is not an IANA time zone name;"
                    " use one like Europe/Stockholm or America/New_York."
                )
        await store_of(self.services).set(interaction.guild_id or 0, by=_by(interaction), timezone=zone)
        shown = zone or self.services.settings.timezone
        await self._changed(
            interaction, "timezone", f"Dates in my memory of this server now read in {shown}."
        )

    @settings.command(name="recall-language", description="The language recall reads this server's words in")
    @app_commands.describe(language="'auto' guesses each channel's language from its first messages")
    @app_commands.choices(
        language=[app_commands.Choice(name=name, value=name) for name in ("auto", *LANGUAGES)]
    )
    async def recall_language(self, interaction: discord.Interaction, language: str) -> None:
        chosen = valid_language(language)
        # Every channel's messages are indexed again, in this command: a big server takes a while.
        await interaction.response.defer(ephemeral=True, thinking=True)
        await store_of(self.services).set(interaction.guild_id or 0, search_language=chosen)
        shown = chosen or "the language each channel is written in (guessed)"
        await self._changed(
            interaction, "recall_language", f"recall now finds other forms of words in {shown}."
        )

    @settings.command(
        name="budget", description="A monthly budget in US dollars for my replies and summaries"
    )
    @app_commands.describe(
        usd="Dollars a month, replies and summaries together; 0 = no budget",
        alerts="Where the budget warning goes (default: a DM to the server owner)",
    )
    async def budget(
        self,
        interaction: discord.Interaction,
        usd: app_commands.Range[float, 0, 1_000_000],
        alerts: ChannelOption | None = None,
    ) -> None:
        amount = Decimal(str(usd)).quantize(Decimal("0.01"))
        values: dict[str, Any] = {"monthly_budget_usd": amount}
        if alerts is not None:
            guild = interaction.guild
            resolved = guild.get_channel_or_thread(alerts.id) if guild is not None else None
            mine = resolved.permissions_for(guild.me) if resolved is not None and guild is not None else None
            if mine is None or not (mine.view_channel and mine.send_messages):
                # Checked now: the warning comes once a month, and a lost one would go unnoticed.
                raise UserFacingError(
                    f"I cannot post in {alerts.mention}; pick a channel where I may send messages."
                )
            values["alert_channel_id"] = alerts.id
        await store_of(self.services).set(interaction.guild_id or 0, by=_by(interaction), **values)
        if amount == 0:
            text = "No budget: I reply whatever it costs (the host's own limits still apply)."
        else:
            where = alerts.mention if alerts is not None else "the alert channel (or the owner's DMs)"
            text = (
                f"Budget set to ${amount:.2f} a month for replies and summaries together. At 80% (or"
                f" when this month's pace would cross it) I warn in {where}; at 100% I stop replying"
                " until the 1st."
            )
        await self._changed(interaction, "budget", text)


async def setup(bot: commands.Bot) -> None:
    await bot.add_cog(ServerSettings(bot))
