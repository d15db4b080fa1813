"""Commands for everyone: /zoom, /recall, /forget-me, /remember-me, /export-me.

Each answers privately (ephemeral) and only ever about the channel, thread or DM it is used
in: the memory is looked up from the interaction's own channel, never from an option, so
no one can read another channel's memory through these commands (docs/design.md section 3).
"""

from __future__ import annotations

import gzip
import io
import re
from datetime import timedelta

import discord
import structlog
from discord import app_commands
from discord.ext import commands

from bot.commands.forget import forget_person, names_of, remember_person
from bot.commands.pagination import send_paged
from bot.commands.tree import ServicesCog, answer, interaction_ids
from bot.commands.ui import ConfirmView, address_choices, ask_to_confirm
from bot.gateway.running import ingest_of
from memory import EXPORT_MARK, PAGE_INDENT, MemoryEngine, PersonExport
from memory.errors import UserFacingError

log = structlog.get_logger(__name__)

NO_MEMORY_HERE = "I have no memory of this channel yet."
NO_HISTORY_HERE = (
    "You cannot read this channel's message history, so I will not show you what was said in it."
)
MESSAGE_PAGES_SHOWN = 10  # engine pages of one message joined for a person (10 x 4,000 chars)
RECALL_LIMIT = 10  # hits for a person; the answer is paginated, so more than the model's 5
RECALL_CHARS = 12_000

EXPORT_EVERY = timedelta(hours=1)  # a person's export reads all of their messages: once an hour
EXPORT_FILE_BYTES = 10 * 1024 * 1024  # Discord's upload limit for a bot's message; past it, gzip
EXPORT_TOO_SOON = "You can have one export an hour; ask again in {minutes} minutes."

# reads.zoom heads each page of a long message with "(page p of N of message #k. Next: ...)".
_PAGE_HEAD = re.compile(r"\(page (\d+) of (\d+) of message #\d+\.[^\n]*\)\n")


async def zoom_text(engine: MemoryEngine, chat_id: int, address: str) -> str:
    """What /zoom shows: the two lines under ``address``, or one message whole (all its pages)."""
    first = await engine.zoom_address(chat_id, address)
    head = _PAGE_HEAD.match(first)
    if head is None:
        return first
    pages = min(int(head.group(2)), MESSAGE_PAGES_SHOWN)
    bodies = [first[head.end() :]]
    for page in range(2, pages + 1):
        text = await engine.zoom_address(chat_id, address, page)
        more = _PAGE_HEAD.match(text)
        # Joined for a person, the page indent (against forged heads) has done its work.
        bodies.append(text[more.end() :].removeprefix(PAGE_INDENT) if more else text)
    if int(head.group(2)) > pages:
        bodies.append(f"(the message goes on for {int(head.group(2)) - pages} more pages)")
    return "".join(bodies)


class People(ServicesCog):
    async def _chat_here(self, interaction: discord.Interaction) -> int:
        """This channel's memory; an error sentence when it has none, or when the member may not
        read its history (then older messages would show what was said before they could see)."""
        if interaction.channel_id is None:
            raise UserFacingError(NO_MEMORY_HERE)
        # Discord resolves the member's permissions in this channel; a DM has none to check.
        mine = interaction.permissions
        if interaction.guild_id is not None and not (mine.view_channel and mine.read_message_history):
            raise UserFacingError(NO_HISTORY_HERE)
        chat = await self.services.engine.chat_by_discord_id(interaction.channel_id)
        if chat is None:
            raise UserFacingError(NO_MEMORY_HERE)
        return chat.id

    @app_commands.command(name="zoom", description="Open a memory line (like 40+8) down to the messages")
    @app_commands.describe(address="A line's address id+n, like 40+8; id+1 is one whole message")
    async def zoom(self, interaction: discord.Interaction, address: app_commands.Range[str, 1, 40]) -> None:
        chat_id = await self._chat_here(interaction)
        await send_paged(interaction, await zoom_text(self.services.engine, chat_id, address))

    @zoom.autocomplete("address")
    async def zoom_address_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        try:
            chat_id = await self._chat_here(interaction)
            return address_choices(await self.services.engine.row_addresses(chat_id), current)
        except UserFacingError:
            return []
        except Exception as exc:  # an autocomplete cannot show an error; an empty list is the answer
            log.warning("autocomplete.failed", error=type(exc).__qualname__, **interaction_ids(interaction))
            return []

    @app_commands.command(name="recall", description="Search what was said in this channel")
    @app_commands.describe(
        query="Words to look for (part of a word or a name works too)",
        author="Only messages by this person",
    )
    async def recall(
        self,
        interaction: discord.Interaction,
        query: app_commands.Range[str, 1, 200],
        author: discord.User | None = None,
    ) -> None:
        chat_id = await self._chat_here(interaction)
        # Full-text search over a long chat can take a moment: take the 3-second window now.
        await interaction.response.defer(ephemeral=True, thinking=True)
        text = await self.services.engine.recall(
            chat_id,
            query,
            author_id=author.id if author is not None else None,
            limit=RECALL_LIMIT,
            max_chars=RECALL_CHARS,
        )
        if author is not None and text.startswith("No message matches"):
            text = f"No message from {author.display_name} matches {' '.join(query.split())!r}."
        await send_paged(interaction, text)

    @app_commands.command(name="forget-me", description="Erase everything you wrote from my memory")
    @app_commands.describe(
        stop_remembering="Also stop remembering your messages from now on (until /remember-me)"
    )
    async def forget_me(self, interaction: discord.Interaction, stop_remembering: bool = False) -> None:
        guild_id, user_id = interaction.guild_id, interaction.user.id
        where = "in every channel and thread of this server" if guild_id else "in our direct messages"
        text = f"This erases every message you wrote {where} from my memory, for good."
        if stop_remembering:
            text += " I will also stop remembering your messages from now on, until you use /remember-me."
        text += " Nothing is erased until you press the button."

        async def confirmed(press: discord.Interaction) -> str:  # only the asker can press
            names = names_of(press.user)
            ingest = ingest_of(self.bot)
            return await forget_person(
                self.services, ingest, guild_id, user_id, stop_remembering, names, asked_at=press.id
            )

        view = ConfirmView(user_id, confirm_label="Erase my messages", on_confirm=confirmed)
        await ask_to_confirm(interaction, text, view)

    @app_commands.command(name="export-me", description="A private file of everything I keep that you wrote")
    async def export_me(self, interaction: discord.Interaction) -> None:
        engine, guild_id, user_id = self.services.engine, interaction.guild_id, interaction.user.id
        # Claimed before the export is read: the limit holds with two processes and restarts.
        if not await engine.claim_mark(EXPORT_MARK, user_id, EXPORT_EVERY):
            wait = await engine.mark_wait(EXPORT_MARK, user_id, EXPORT_EVERY)
            raise UserFacingError(EXPORT_TOO_SOON.format(minutes=max(1, round(wait / 60))))
        await interaction.response.defer(ephemeral=True, thinking=True)
        export = await engine.export_person(user_id, guild_id)
        log.info("export_me.sent", messages=len(export.messages), **interaction_ids(interaction))
        where = "in this server" if guild_id else "in our direct messages"
        await answer(interaction, export_summary(export, where), file=export_file(export))

    @app_commands.command(
        name="remember-me", description="Let me remember your messages again after /forget-me"
    )
    async def remember_me(self, interaction: discord.Interaction) -> None:
        ingest, guild_id, user_id = ingest_of(self.bot), interaction.guild_id, interaction.user.id
        said = await remember_person(self.services, ingest, guild_id, user_id, asked_at=interaction.id)
        await answer(interaction, said)


def export_file(export: PersonExport) -> discord.File:
    """The export as a file Discord takes: JSON, gzipped when it is over the upload limit."""
    data = export.render().encode()
    name = f"eva-export-{export.user_id}.json"
    if len(data) > EXPORT_FILE_BYTES:
        data, name = gzip.compress(data), f"{name}.gz"
    return discord.File(io.BytesIO(data), filename=name)


def export_summary(export: PersonExport, where: str) -> str:
    chats = len(export.chats)
    return (
        f"Everything I keep that you wrote {where}: {len(export.messages)} messages"
        f" in {chats} {'chat' if chats == 1 else 'chats'}, each with its chat, date and text, and how"
        f" many of my memory lines credit or name you. {export.erasure}"
    )


async def setup(bot: commands.Bot) -> None:
    await bot.add_cog(People(bot))
