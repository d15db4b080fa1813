"""`/memory ...`: server admins inspect and control a channel's memory (docs/design.md section 8).

The group is guild-only and defaults to the Manage Server permission, but a server admin
can override that default for anyone (Server Settings > Integrations), so every command
checks the permission again when it runs. Every command acts only on a channel the invoker
can read (View Channel and Read Message History), the one it is used in included: Manage
Server is not a way to read what a channel hides, and showing or changing the memory of a
channel one cannot read is refused alike (status tells when its last message was, wipe how
many it holds). A ``channel`` option must also be one the bot can read; anything else gets
one clear ephemeral line.
"""

from __future__ import annotations

import asyncio
import io
import re
from dataclasses import dataclass

import discord
import structlog
from discord import app_commands
from discord.ext import commands

from bot.commands.forget import plural
from bot.commands.pagination import send_paged
from bot.commands.status import memory_status, node_report
from bot.commands.tree import ManagersCog, answer, interaction_ids
from bot.commands.ui import ConfirmView, address_choices, ask_to_confirm
from bot.gateway.erasure_order import wipe_moment
from bot.gateway.running import ingest_of
from bot.shards import describe_bot, served_shards
from memory import ChatInfo
from memory.errors import UserFacingError

log = structlog.get_logger(__name__)

# An interaction token lasts 15 minutes; a compaction that is not done after 10 (the model
# is down, say) is cancelled and left to the background compactor.
COMPACT_WAIT_SECONDS = 600.0

ChannelOption = app_commands.AppCommandChannel | app_commands.AppCommandThread


@dataclass(frozen=True, slots=True)
class Target:
    label: str  # how the channel is named in answers (a mention)
    chat: ChatInfo


def _file_name(chat: ChatInfo) -> str:
    slug = re.sub(r"[^a-z0-9_-]+", "-", chat.name.lower()).strip("-") or str(chat.id)
    return f"memory-{slug[:60]}.txt"


class MemoryAdmin(ManagersCog):
    memory = app_commands.Group(
        name="memory",
        description="Inspect and control my memory of a channel",
        guild_only=True,  # sent as dm_permission false (older clients)...
        allowed_contexts=app_commands.AppCommandContext(guild=True),  # ...and as contexts [guild]
        default_permissions=discord.Permissions(manage_guild=True),
    )

    async def _target(self, interaction: discord.Interaction, channel: ChannelOption | None) -> Target:
        """The chat a command acts on: the option's channel, or the one the command is used in."""
        if channel is None:
            channel_id = interaction.channel_id or 0
            label = f"<#{channel_id}>"
            mine = interaction.permissions  # the invoker's, in the channel the command is used in
        else:
            channel_id, label = channel.id, channel.mention
            mine = channel.permissions  # the invoker's permissions there, resolved by Discord
        if not (mine.view_channel and mine.read_message_history):
            raise UserFacingError(f"You cannot read {label}, so I will not show or change its memory.")
        if channel is not None:
            guild = interaction.guild
            resolved = guild.get_channel_or_thread(channel_id) if guild is not None else None
            me = guild.me if guild is not None else None
            bot_perms = resolved.permissions_for(me) if resolved is not None and me is not None else None
            if bot_perms is None or not (bot_perms.view_channel and bot_perms.read_message_history):
                raise UserFacingError(
                    f"I cannot read {label} (I need View Channel and Read Message History there),"
                    " so I have no memory of it."
                )
        chat = await self.services.engine.chat_by_discord_id(channel_id)
        if chat is None:
            raise UserFacingError(f"I have no memory of {label} yet.")
        return Target(label, chat)

    @memory.command(name="status", description="Numbers about a channel's memory")
    @app_commands.describe(channel="Which channel (default: this one)")
    async def status(self, interaction: discord.Interaction, channel: ChannelOption | None = None) -> None:
        target = await self._target(interaction, channel)
        shards = describe_bot(self.bot) if served_shards(self.bot) is not None else None
        await send_paged(
            interaction, await memory_status(self.services, target.chat.id, target.label, shards)
        )

    @memory.command(name="view", description="The memory exactly as the model reads it, as a file")
    @app_commands.describe(channel="Which channel (default: this one)")
    async def view(self, interaction: discord.Interaction, channel: ChannelOption | None = None) -> None:
        target = await self._target(interaction, channel)
        await interaction.response.defer(ephemeral=True, thinking=True)
        prompt = await self.services.engine.prompt_view(target.chat.id)
        data = prompt.render().encode("utf-8")
        file = discord.File(io.BytesIO(data), filename=_file_name(target.chat))
        cards, rows = (
            plural(len(prompt.people_lines), "people card"),
            plural(len(prompt.row_lines), "row line"),
        )
        summary = (
            f"The memory of {target.label} as the model reads it: {cards}, {rows}"
            f" and {plural(len(prompt.tail_lines), 'raw message')} ({len(data):,} bytes)."
        )
        await answer(interaction, summary, file=file)

    @memory.command(
        name="people", description="The cards about the people of a channel, as the model reads them"
    )
    @app_commands.describe(channel="Which channel (default: this one)")
    async def people(self, interaction: discord.Interaction, channel: ChannelOption | None = None) -> None:
        target = await self._target(interaction, channel)
        cards = await self.services.engine.people_cards(target.chat.id)
        if not cards:
            text = (
                f"No people cards for {target.label} yet: they are written from the memory lines, "
                "after new lines are swapped in and the channel is quiet."
            )
        else:
            text = (
                f"**People of {target.label}** ({plural(len(cards), 'card')}, most active first)\n"
                + "\n".join(cards)
            )
        await send_paged(interaction, text)

    @memory.command(
        name="node", description="One memory line: its text, dates, authors and the lines under it"
    )
    @app_commands.describe(
        address="The line's address id+n, like 40+8", channel="Which channel (default: this one)"
    )
    async def node(
        self,
        interaction: discord.Interaction,
        address: app_commands.Range[str, 1, 40],
        channel: ChannelOption | None = None,
    ) -> None:
        target = await self._target(interaction, channel)
        await send_paged(interaction, await node_report(self.services, target.chat.id, address))

    @node.autocomplete("address")
    async def node_address_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        # Autocomplete skips interaction_check: check here, and stay quiet on any failure.
        if interaction.guild is None or not interaction.permissions.manage_guild:
            return []
        picked = getattr(interaction.namespace, "channel", None)
        try:
            target = await self._target(interaction, picked if isinstance(picked, ChannelOption) else None)
            return address_choices(await self.services.engine.row_addresses(target.chat.id), current)
        except UserFacingError:
            return []
        except Exception as exc:
            log.warning("autocomplete.failed", error=type(exc).__qualname__, **interaction_ids(interaction))
            return []

    @memory.command(name="compact", description="Summarize and swap in the newest messages now")
    @app_commands.describe(channel="Which channel (default: this one)")
    async def compact(self, interaction: discord.Interaction, channel: ChannelOption | None = None) -> None:
        target = await self._target(interaction, channel)
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            report = await asyncio.wait_for(
                self.services.engine.compact(target.chat.id, until_idle=True, force_swap=True),
                COMPACT_WAIT_SECONDS,
            )
        except TimeoutError:
            raise UserFacingError(
                f"Compacting {target.label} did not finish in {COMPACT_WAIT_SECONDS / 60:.0f} minutes"
                " (is the model reachable?); the background compactor keeps trying."
            ) from None
        except RuntimeError as exc:
            if "without a compactor" not in str(exc):
                raise
            raise UserFacingError("Compaction does not run in this process; the worker does it.") from None
        log.info(
            "memory.compacted",
            chat_id=target.chat.id,
            calls=report.calls,
            swaps=report.swaps,
            **interaction_ids(interaction),
        )
        if report.skipped:
            text = f"Another worker is compacting {target.label} right now; try again in a minute."
        elif not (report.calls or report.failed_calls or report.free_nodes or report.swaps):
            text = (
                f"Nothing to compact in {target.label}: its raw tail is below the size that starts"
                " compaction and no lines are waiting to be built."
            )
        else:
            swapped = "the new memory row is in use" if report.swaps else "the memory row did not change"
            text = (
                f"Compacted {target.label}: {plural(report.model_nodes, 'line')} written by the model"
                f" in {plural(report.calls, 'call')}, {report.free_nodes:,} built free; {swapped}."
            )
            if report.failed_calls:
                text += f" {plural(report.failed_calls, 'call')} failed and will be retried."
        await answer(interaction, text)

    async def _set_paused(
        self, interaction: discord.Interaction, channel: ChannelOption | None, paused: bool
    ) -> None:
        target = await self._target(interaction, channel)
        if target.chat.paused == paused:
            state = "paused" if paused else "running"
            await answer(interaction, f"Logging in {target.label} was already {state}.")
            return
        await self.services.engine.set_paused(target.chat.id, paused)
        log.info(
            "memory.paused" if paused else "memory.resumed",
            chat_id=target.chat.id,
            **interaction_ids(interaction),
        )
        if paused:
            text = (
                f"Paused: in {target.label} I no longer log messages and no longer reply."
                " What I remember of it stays; /memory resume undoes both."
            )
        else:
            text = f"Resumed: I log messages in {target.label} and reply there again."
        await answer(interaction, text)

    @memory.command(name="pause", description="Stop logging and replying in a channel (its memory stays)")
    @app_commands.describe(channel="Which channel (default: this one)")
    async def pause(self, interaction: discord.Interaction, channel: ChannelOption | None = None) -> None:
        await self._set_paused(interaction, channel, True)

    @memory.command(name="resume", description="Log and reply in a paused channel again")
    @app_commands.describe(channel="Which channel (default: this one)")
    async def resume(self, interaction: discord.Interaction, channel: ChannelOption | None = None) -> None:
        await self._set_paused(interaction, channel, False)

    @memory.command(name="dashboard", description="A private sign-in link to this server's web dashboard")
    async def dashboard(self, interaction: discord.Interaction) -> None:
        settings = self.services.settings
        if settings.dashboard_port is None:
            raise UserFacingError("The web dashboard is off; the host turns it on with DASHBOARD_PORT.")
        guild_id = interaction.guild_id or 0
        secret = await self.services.engine.new_dashboard_link(guild_id, interaction.user.id)
        log.info("memory.dashboard_link", **interaction_ids(interaction))  # never the link itself
        await answer(
            interaction,
            f"Your sign-in link to this server's dashboard (it works once, for 10 minutes, for you only;"
            f" do not share it): {settings.dashboard_base()}/signin?t={secret}",
        )

    @memory.command(name="wipe", description="Erase a channel's whole memory (asks to confirm)")
    @app_commands.describe(channel="Which channel (default: this one)")
    async def wipe(self, interaction: discord.Interaction, channel: ChannelOption | None = None) -> None:
        target = await self._target(interaction, channel)
        chat_id, ids = target.chat.id, interaction_ids(interaction)

        async def confirmed(press: discord.Interaction) -> str:
            # No message written before the wipe is logged again (bot/gateway/erasure_order.py).
            moment = wipe_moment(ingest_of(self.bot), press.id)
            report = await self.services.engine.wipe_chat(chat_id, moment=moment)
            log.info("memory.wiped", chat_id=chat_id, messages=report.messages, lines=report.nodes, **ids)
            lines = f" and {plural(report.nodes, 'line')}" if report.nodes else ""
            return f"Wiped the memory of {target.label}: {plural(report.messages, 'message')}{lines} erased."

        count = await self.services.engine.message_count(chat_id)
        text = (
            f"This erases the whole memory of {target.label} ({plural(count, 'message')} and every line"
            " built from them), for good. Nothing is erased until you press the button."
        )
        view = ConfirmView(interaction.user.id, confirm_label="Wipe this memory", on_confirm=confirmed)
        await ask_to_confirm(interaction, text, view)


async def setup(bot: commands.Bot) -> None:
    await bot.add_cog(MemoryAdmin(bot))
