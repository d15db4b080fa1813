"""The Discord side of the forget_me tool: the confirmation button only the asker can press.

The tool itself (bot/core/tools.py) only calls ``ToolContext.ask_forget``; the reply cog binds
that to :func:`post_forget_confirmation`, so the tool code needs no discord.
"""

from __future__ import annotations

import discord
import structlog

from bot.commands.forget import forget_person, names_of
from bot.commands.ui import ConfirmView
from bot.gateway.ingest import Ingest
from bot.services import Services

log = structlog.get_logger(__name__)


def forget_prompt(asker_id: int, in_dm: bool) -> str:
    where = "in our DMs" if in_dm else "in this server"
    return f"<@{asker_id}> press Confirm to erase everything you wrote {where}. Only you can press it."


async def forget_after_confirmation(
    services: Services,
    ingest: Ingest | None,
    guild_id: int | None,
    user_id: int,
    names: tuple[str, ...] = (),
    asked_at: int | None = None,
) -> str:
    """The erasure itself, run only from the owner's press (one implementation: bot/commands/forget.py);
    ``asked_at``: the press's snowflake."""
    return await forget_person(
        services, ingest, guild_id, user_id, opt_out=False, names=names, asked_at=asked_at
    )


async def post_forget_confirmation(
    services: Services,
    ingest: Ingest | None,
    channel: discord.abc.Messageable,
    *,
    guild_id: int | None,
    asker_id: int,
    expires_after: float = 120,
) -> ConfirmView:
    """Post the asker's confirmation button in the channel (a tool call is no interaction, so
    the message cannot be ephemeral: the button itself refuses everyone but the asker)."""

    async def confirmed(press: discord.Interaction) -> str:  # the view lets only the asker press
        log.info("forget_me.confirmed", guild_id=guild_id, user_id=asker_id)
        names = names_of(press.user)
        return await forget_after_confirmation(services, ingest, guild_id, asker_id, names, press.id)

    view = ConfirmView(asker_id, confirm_label="Confirm", on_confirm=confirmed, timeout=expires_after)
    view.message = await channel.send(
        forget_prompt(asker_id, in_dm=guild_id is None),
        view=view,
        allowed_mentions=discord.AllowedMentions(
            everyone=False, roles=False, users=[discord.Object(asker_id)], replied_user=False
        ),
    )
    return view
