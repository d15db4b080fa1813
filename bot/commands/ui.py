"""What the command cogs share on screen: a confirmation button only one person can press
(forget-me, memory wipe), shown with :func:`ask_to_confirm`, and the autocomplete of row
addresses (/zoom, /memory node).

Usage::

    view = ConfirmView(user.id, confirm_label="Confirm", on_confirm=do_it)
    view.message = await channel.send("<@id> press Confirm to ...", view=view)
    # or, ephemeral: await itx.response.send_message(..., view=view, ephemeral=True)
    #                view.message = await itx.original_response()

Only the owner's press counts: anyone else gets an ephemeral "This button is not for you." and
nothing happens. Confirm runs ``on_confirm`` once and replaces the message with the text it
returns; Cancel and the timeout change nothing and say so. A press after the first (a double
click, or a client still showing the buttons while the erasure runs) is answered privately
with ALREADY_DONE: the view keeps listening until its timeout rather than stopping at the first
press, since a stopped view is no longer dispatched to and Discord would show "interaction
failed" for the second press.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import discord
import structlog
from discord import app_commands

from bot.commands.tree import answer
from memory.errors import UserFacingError

log = structlog.get_logger(__name__)

MAX_CHOICES = 25  # Discord shows at most 25 autocomplete choices

NOT_YOURS = "This button is not for you."
ALREADY_DONE = "That was already answered."
CANCELLED = "Cancelled. Nothing was changed."
TIMED_OUT = "No answer in time, so nothing was changed."
FAILED = "Something went wrong, so nothing was changed. Try again in a minute."


class ConfirmView(discord.ui.View):
    def __init__(
        self,
        owner_id: int,
        *,
        confirm_label: str = "Confirm",
        on_confirm: Callable[[discord.Interaction], Awaitable[str]],
        timeout: float = 120,
    ) -> None:
        super().__init__(timeout=timeout)
        self.owner_id = owner_id
        self.on_confirm = on_confirm
        self.message: discord.Message | discord.InteractionMessage | None = None
        self.outcome: str | None = None  # "confirmed", "cancelled", "timed out", "failed"
        self.confirm_button.label = confirm_label

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id != self.owner_id:
            await interaction.response.send_message(NOT_YOURS, ephemeral=True)
            return False
        if self.outcome is not None:
            await interaction.response.send_message(ALREADY_DONE, ephemeral=True)
            return False
        return True

    @discord.ui.button(label="Confirm", style=discord.ButtonStyle.danger)
    async def confirm_button(
        self, interaction: discord.Interaction, _: discord.ui.Button[ConfirmView]
    ) -> None:
        self.outcome = "confirmed"  # set before any await: a double press is refused
        # Not stopped: the view stays registered until its timeout so that a second press
        # reaches interaction_check and is told ALREADY_DONE.
        # The work may take longer than Discord's 3 s to acknowledge: defer, then edit.
        await interaction.response.defer()
        try:
            text = await self.on_confirm(interaction)
        except UserFacingError as exc:
            self.outcome, text = "failed", str(exc)
        except Exception as exc:
            self.outcome, text = "failed", FAILED
            log.error(
                "confirm.failed",
                owner_id=self.owner_id,
                message_id=interaction.message.id if interaction.message else None,
                error=type(exc).__name__,
            )
        await interaction.edit_original_response(content=text, view=None)

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary)
    async def cancel_button(
        self, interaction: discord.Interaction, _: discord.ui.Button[ConfirmView]
    ) -> None:
        self.outcome = "cancelled"  # the view keeps listening (see confirm_button)
        await interaction.response.edit_message(content=CANCELLED, view=None)

    async def on_timeout(self) -> None:
        if self.outcome is not None:
            return
        self.outcome = "timed out"
        if self.message is not None:
            with contextlib.suppress(discord.HTTPException):
                await self.message.edit(content=TIMED_OUT, view=None)


async def ask_to_confirm(interaction: discord.Interaction, text: str, view: ConfirmView) -> None:
    """Show ``text`` with the confirmation buttons, privately; the view can edit it on timeout."""
    if not await answer(interaction, text, view=view):
        view.stop()
        return
    try:
        view.message = await interaction.original_response()
    except discord.HTTPException:
        pass  # only the timeout notice is lost: the buttons still work


def address_choices(addresses: list[str], typed: str) -> list[app_commands.Choice[str]]:
    """Row addresses matching what the user typed so far: prefix matches, else containing."""
    typed = typed.strip()
    matches = [a for a in addresses if a.startswith(typed)] or [a for a in addresses if typed in a]
    return [app_commands.Choice(name=a, value=a) for a in matches[:MAX_CHOICES]]
