"""Every `eva` subcommand and its options, and nothing else: `eva --help`, `eva --version` and a
refused argument are answered from this module alone, before the modules that run a command
(bot/cli/run.py) pull in SQLAlchemy, discord.py and the model client (about 2 s of imports;
bench/cli_startup.py measures it)."""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bot.cli.args import OneLineParser, chat_id, chat_name, guild_or_dm, snowflake, text

DISTRIBUTION = "eva-memory-bot"  # pyproject.toml's project name

# Shown where the word appears (`eva compact`, `eva stats`): what a host reads there.
FREE_LINES = (
    "free lines: lines made without a model call (a message short enough to be its own line, "
    "or two lines that fit together in one)"
)


def installed_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="eva", description="Eva, a Discord companion that remembers.")
    parser.add_argument("--version", action="version", version=f"eva {installed_version()}")
    subs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _admin(subs)
    _memory(subs)
    _erasure(subs)
    return parser


def _admin(subs: Any) -> None:
    p = subs.add_parser("run", help="migrate the database, then run the bot")
    p.add_argument(
        "--no-compactor",
        action="store_true",
        help="the gateway only: `eva worker` processes build the memory (a deployment of several processes)",
    )
    subs.add_parser("migrate", help="apply database migrations")
    subs.add_parser("doctor", help="check settings, Discord, Anthropic, the database and its migrations")
    subs.add_parser("worker", help="run only the background compactor (no Discord connection)")
    subs.add_parser("health", help="health check: gateway connected, database answering")
    subs.add_parser("dashboard-link", help="a one-time sign-in link to the web dashboard, as the host")
    p = subs.add_parser(
        "sync-commands", help="register the slash commands with Discord (globally, or in one server)"
    )
    p.add_argument(
        "--guild", type=snowflake, metavar="ID", help="register in this server only (appear at once)"
    )


def _memory(subs: Any) -> None:
    p = subs.add_parser(
        "import", help="import a chat log (JSONL or DiscordChatExporter JSON) into an empty chat"
    )
    p.add_argument("file", type=Path, help="the exported file (JSONL, or DiscordChatExporter's JSON)")
    p.add_argument("--chat", required=True, type=chat_name, help="name of the chat to create")
    p.add_argument(
        "--author-ids",
        type=Path,
        help="JSONL only: a JSON file mapping author names to Discord user ids (for `eva forget --user`)",
    )
    p = subs.add_parser(
        "compact", help="build the memory lines now and swap them in", epilog=FREE_LINES + "."
    )
    p.add_argument("--chat", required=True, type=chat_name)
    p.add_argument("--until-idle", action="store_true", help="keep going until nothing is left to build")
    p.add_argument("--fake-model", action="store_true", help="use the deterministic fake summarizer (no API)")
    p = subs.add_parser("view", help="print the memory block and raw tail exactly as the model sees them")
    p.add_argument("--chat", required=True, type=chat_name)
    p = subs.add_parser("zoom", help="open a memory line (ID+N) into its two halves, or a message (ID+1)")
    p.add_argument("--chat", required=True, type=chat_name)
    p.add_argument("address", type=text, help="a line's address as `eva view` shows it, e.g. 40+8")
    p.add_argument(
        "--page",
        type=int,
        help="for a long message (an address ending in +1): which page of it to show (from 1)",
    )
    p = subs.add_parser("recall", help="search a chat's messages")
    p.add_argument("--chat", required=True, type=chat_name)
    p.add_argument("words", nargs="+", type=text)
    p.add_argument("--author", type=text)
    p.add_argument("--limit", type=int, default=5)
    p = subs.add_parser(
        "stats",
        help="messages, memory and model usage of one chat, or the list of chats",
        epilog=FREE_LINES + ".",
    )
    p.add_argument("--chat", type=chat_name)


def _erasure(subs: Any) -> None:
    p = subs.add_parser(
        "forget",
        help="erase everything one person wrote: in one guild ('dm' for their DMs), or in every chat",
    )
    p.add_argument(
        "--guild", type=guild_or_dm, help="a guild id, or 'dm'; leave out to erase them from every chat"
    )
    p.add_argument("--user", required=True, type=snowflake)
    _confirmation(p)
    p = subs.add_parser("wipe", help="erase one chat's whole memory (every message and line)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--chat", type=chat_name, help="the chat's name, or its Discord channel id")
    which.add_argument(
        "--id", type=chat_id, help="the chat's own id (listed when a name matches several chats)"
    )
    _confirmation(p)
    p = subs.add_parser("export", help="write everything one person wrote, in every chat, as JSON")
    p.add_argument("--user", required=True, type=snowflake)
    p.add_argument("--out", metavar="FILE", help="write to this file (default: standard output)")


def _confirmation(p: argparse.ArgumentParser) -> None:
    p.add_argument("--yes", action="store_true", help="erase without asking (needed without a terminal)")
    p.add_argument("--dry-run", action="store_true", help="show what would be erased, and erase nothing")
