"""The slash-command tree, with every command error handled in one place.

- :class:`memory.errors.UserFacingError` (bad address, empty query, no memory here...): its
  one sentence, as a short ephemeral reply. Nothing was changed.
- A failed permission check: "You need the Manage Server permission for this."
- Anything else: logged with ids only (guild, channel, user, command; never text, not even
  the exception's message, which can quote a query or a database parameter) and answered
  with a short apology.

An interaction that was already answered gets a followup instead; one that is gone (Unknown
interaction 10062, an expired 15-minute token) is logged and dropped, never raised.
"""

from __future__ import annotations

import traceback
from typing import Any

import discord
import structlog
from discord import app_commands
from discord.ext import commands

from bot.services import Services, services_of
from memory.errors import UserFacingError

log = structlog.get_logger(__name__)

NEED_MANAGE_SERVER = "You need the Manage Server permission for this."
SERVER_ONLY = "This command works only in a server."
BAD_OPTION = "I could not use one of the values you gave; please pick it again from the list."
APOLOGY = "Sorry, something went wrong on my side. It has been logged; please try again in a moment."
OUT_OF_DATE = "This command is out of date here: the bot's host needs to run `eva sync-commands`."

# Discord's answers when an interaction can no longer be answered: Unknown Webhook, Unknown
# Interaction (the 3-second window passed), Interaction has already been acknowledged,
# Invalid Webhook Token (the 15-minute token expired).
GONE_CODES = frozenset({10015, 10062, 40060, 50027})


def interaction_ids(interaction: discord.Interaction) -> dict[str, Any]:
    """What a log line may say about an interaction: ids and the command's name."""
    command = interaction.command
    return {
        "guild_id": interaction.guild_id,
        "channel_id": interaction.channel_id,
        "user_id": interaction.user.id,
        "command": command.qualified_name if command is not None else None,
        "interaction_id": interaction.id,
    }


def safe_traceback(error: BaseException) -> str:
    """The frames and exception types of ``error`` and its causes, without their messages."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append("".join(traceback.format_tb(current.__traceback__)) + type(current).__qualname__)
        current = current.__cause__ or current.__context__
    return "\n-- caused by --\n".join(parts)


def is_gone(error: BaseException) -> bool:
    return isinstance(error, discord.HTTPException) and error.code in GONE_CODES


async def answer(
    interaction: discord.Interaction,
    text: str,
    *,
    view: discord.ui.View | None = None,
    file: discord.File | None = None,
) -> bool:
    """An ephemeral answer: the response if none was sent yet, else a followup.

    Returns False (after logging) when the interaction can no longer be answered.
    """
    extra: dict[str, Any] = {}
    if view is not None:
        extra["view"] = view
    if file is not None:
        extra["file"] = file
    if interaction.is_expired():
        log.info("interaction.expired", **interaction_ids(interaction))
        return False
    mentions = discord.AllowedMentions.none()  # memory text quotes people; a reply never pings
    try:
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=mentions, **extra)
        else:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=mentions, **extra)
    except discord.HTTPException as exc:
        if not is_gone(exc):
            raise
        log.info("interaction.gone", code=exc.code, **interaction_ids(interaction))
        return False
    return True


def message_for(error: BaseException) -> str | None:
    """The sentence a person sees for ``error``, or None for a fault of ours."""
    if isinstance(error, UserFacingError):
        return str(error)
    if isinstance(error, app_commands.NoPrivateMessage):
        return SERVER_ONLY
    if isinstance(error, app_commands.CheckFailure):  # MissingPermissions included
        return NEED_MANAGE_SERVER
    if isinstance(error, app_commands.TransformerError):
        return BAD_OPTION
    if isinstance(error, app_commands.CommandNotFound | app_commands.CommandSignatureMismatch):
        return OUT_OF_DATE  # Discord shows commands from an older sync than this code
    return None


async def report_error(interaction: discord.Interaction, error: BaseException) -> None:
    """Answer ``error`` as the module docstring says; never raises."""
    cause = error.original if isinstance(error, app_commands.CommandInvokeError) else error
    if is_gone(cause):
        log.info("interaction.gone", code=getattr(cause, "code", None), **interaction_ids(interaction))
        return
    text = message_for(cause)
    if text == OUT_OF_DATE:
        log.warning("command.out_of_date", **interaction_ids(interaction))
    if text is None:
        log.error(
            "command.failed",
            error=type(cause).__qualname__,
            traceback=safe_traceback(cause),
            **interaction_ids(interaction),
        )
        text = APOLOGY
    if interaction.type is discord.InteractionType.autocomplete:
        return  # an autocomplete cannot show a message; its choices stay empty
    try:
        await answer(interaction, text)
    except Exception as exc:  # the apology itself failed: log, never raise from an error handler
        log.warning(
            "command.error_reply_failed", error=type(exc).__qualname__, **interaction_ids(interaction)
        )


class EvaCommandTree(app_commands.CommandTree[Any]):
    async def on_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError, /
    ) -> None:
        await report_error(interaction, error)


def require_manage_guild(interaction: discord.Interaction) -> bool:
    """The run-time check of the admin command groups (/memory, /settings): their default
    permission alone can be overridden by a server's admins, so it is checked again here."""
    if interaction.guild is None:
        raise app_commands.NoPrivateMessage()
    if not interaction.permissions.manage_guild:
        raise app_commands.MissingPermissions(["manage_guild"])
    return True


class ServicesCog(commands.Cog):
    """A cog whose commands reach the bot's services (looked up on each use, so a cog loaded
    before the services were set still finds them)."""

    def __init__(self, bot: commands.Bot) -> None:
        self.bot = bot

    @property
    def services(self) -> Services:
        return services_of(self.bot)


class ManagersCog(ServicesCog):
    """A command group only people who may manage the server use (/memory, /settings)."""

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        return require_manage_guild(interaction)
