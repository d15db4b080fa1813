"""`eva sync-commands [--guild ID]`: register the slash commands with Discord, then exit.

Discord rate-limits command registration, and commands only change with a new release, so
the bot never syncs on start (Discord rate-limits command syncs; docs/design.md, provider
facts): run this once after installing or upgrading.
`--guild` registers them in one server only, where they appear at once (handy for testing).
It logs in over REST (no gateway connection, no database) and builds the same command tree
the bot serves.
"""

from __future__ import annotations

import argparse

import discord
from discord import app_commands
from discord.ext import commands

from bot.commands.tree import EvaCommandTree
from bot.errors import CliError
from bot.settings import Settings

# The extensions that define slash commands (the bot also loads ingest and reply, which define none).
COMMAND_EXTENSIONS = ("bot.commands.people", "bot.commands.admin", "bot.commands.settings")


def command_bot() -> commands.Bot:
    """A bot with the command tree only: enough to sync, never connected to the gateway."""
    discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False  # text only: noise
    return commands.Bot(
        command_prefix=commands.when_mentioned,
        intents=discord.Intents(guilds=True),  # never connects; this only quiets a state warning
        tree_cls=EvaCommandTree,
        help_command=None,
    )


def describe(registered: list[app_commands.AppCommand]) -> list[str]:
    """One entry per command: ``/name`` and, for a group, its subcommands."""
    out = []
    for command in sorted(registered, key=lambda c: c.name):
        subs = [o.name for o in command.options if isinstance(o, app_commands.AppCommandGroup)]
        out.append(f"/{command.name}" + (f" ({', '.join(subs)})" if subs else ""))
    return out


async def sync_commands(settings: Settings, guild_id: int | None) -> list[app_commands.AppCommand]:
    token = settings.discord_token.get_secret_value() if settings.discord_token else ""
    if not token:
        raise CliError("DISCORD_TOKEN is not set")
    previous_base = discord.http.Route.BASE
    discord.http.Route.BASE = settings.discord_api_base.rstrip("/")  # a local fake in tests
    bot = command_bot()
    try:
        async with bot:
            await bot.login(token)
            for extension in COMMAND_EXTENSIONS:
                await bot.load_extension(extension)
            if guild_id is None:
                return await bot.tree.sync()
            guild = discord.Object(id=guild_id)
            bot.tree.copy_global_to(guild=guild)
            return await bot.tree.sync(guild=guild)
    except discord.LoginFailure:
        raise CliError("Discord refused the token in DISCORD_TOKEN") from None
    except (discord.Forbidden, discord.NotFound) as exc:
        if guild_id is None:
            raise
        # 50001 Missing Access or 10004 Unknown Guild: the bot is not (properly) in that server.
        raise CliError(
            f"Discord refused to register commands in server {guild_id} (error {exc.code}): is the bot"
            " in that server, invited with the applications.commands scope?"
        ) from None
    finally:
        discord.http.Route.BASE = previous_base


async def cmd_sync_commands(args: argparse.Namespace, settings: Settings) -> int:
    registered = await sync_commands(settings, args.guild)
    where = f"in server {args.guild}" if args.guild else "globally"
    print(f"registered {len(registered)} commands {where}:")
    for line in describe(registered):
        print(f"  {line}")
    return 0
