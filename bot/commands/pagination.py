"""Long ephemeral answers in pages with Previous/Next buttons only the asker can press.

A Discord message holds 2,000 characters; a page holds at most 1,900 so a page marker or a
future prefix still fits. Text is cut on line boundaries (a zoom or recall answer is one
line per message or summary), and only a single line longer than a page is cut inside,
preferably at a space.
"""

from __future__ import annotations

import discord

from bot.commands.tree import answer, report_error

PAGE_CHARS = 1900
BUTTON_TIMEOUT = 600.0  # seconds; the interaction token that edits the message lasts 15 minutes
NOT_YOURS = "These buttons are not for you."


def _cut_line(line: str, limit: int) -> list[str]:
    pieces = []
    while len(line) > limit:
        space = line.rfind(" ", limit // 2, limit)
        cut = space if space > 0 else limit
        pieces.append(line[:cut])
        line = line[cut:].lstrip(" ")
    pieces.append(line)
    return pieces


def paginate(text: str, limit: int = PAGE_CHARS) -> list[str]:
    """Pages of at most ``limit`` characters, whole lines where possible; never empty."""
    pages: list[str] = []
    current = ""
    for raw in text.split("\n"):
        for line in _cut_line(raw, limit):
            candidate = f"{current}\n{line}" if current else line
            if len(candidate) <= limit:
                current = candidate
                continue
            if current.strip():
                pages.append(current)
            current = line
    if current.strip() or not pages:
        pages.append(current or "(empty)")
    return pages


class PagedView(discord.ui.View):
    def __init__(self, owner_id: int, pages: list[str], *, timeout: float = BUTTON_TIMEOUT) -> None:
        super().__init__(timeout=timeout)
        self.owner_id, self.pages, self.index = owner_id, pages, 0
        self.origin: discord.Interaction | None = None  # the command, to disable buttons on timeout
        self._sync()

    def _sync(self) -> None:
        self.previous_page.disabled = self.index == 0
        self.next_page.disabled = self.index >= len(self.pages) - 1
        self.counter.label = f"{self.index + 1}/{len(self.pages)}"

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        if interaction.user.id == self.owner_id:
            return True
        await interaction.response.send_message(NOT_YOURS, ephemeral=True)
        return False

    async def _show(self, interaction: discord.Interaction, index: int) -> None:
        self.index = max(0, min(index, len(self.pages) - 1))
        self._sync()
        await interaction.response.edit_message(
            content=self.pages[self.index], view=self, allowed_mentions=discord.AllowedMentions.none()
        )

    @discord.ui.button(label="Previous", style=discord.ButtonStyle.secondary)
    async def previous_page(
        self, interaction: discord.Interaction, _button: discord.ui.Button[PagedView]
    ) -> None:
        await self._show(interaction, self.index - 1)

    @discord.ui.button(label="1/1", style=discord.ButtonStyle.secondary, disabled=True)
    async def counter(self, interaction: discord.Interaction, _button: discord.ui.Button[PagedView]) -> None:
        await interaction.response.defer()  # a label, never enabled

    @discord.ui.button(label="Next", style=discord.ButtonStyle.primary)
    async def next_page(
        self, interaction: discord.Interaction, _button: discord.ui.Button[PagedView]
    ) -> None:
        await self._show(interaction, self.index + 1)

    async def on_timeout(self) -> None:
        if self.origin is None:
            return
        try:
            await self.origin.edit_original_response(view=None)
        except discord.HTTPException:
            pass  # the message or its token is gone: nothing left to disable

    async def on_error(
        self, interaction: discord.Interaction, error: Exception, _item: discord.ui.Item[PagedView], /
    ) -> None:
        await report_error(interaction, error)


async def send_paged(interaction: discord.Interaction, text: str) -> None:
    """Answer with ``text``: one ephemeral message, or pages with buttons when it is long."""
    pages = paginate(text)
    if len(pages) == 1:
        await answer(interaction, pages[0])
        return
    view = PagedView(interaction.user.id, pages)
    if await answer(interaction, pages[0], view=view):
        view.origin = interaction
    else:
        view.stop()
