"""`eva forget` and `eva wipe`: erasing a person, or one chat, from the command line; and
`eva export --user ID`, what erasing that person everywhere would remove (/export-me's file,
every chat: the host answers a person's request for their data).

Both VACUUM before they exit (no scheduler runs here to do it), so the erased words leave
the table files at once (memory.privacy.erase.purge_dead_rows).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

import discord

from bot.cli.args import chat_id, chat_name, guild_or_dm, snowflake
from bot.cli.memory_commands import _engine
from bot.errors import CliError
from bot.gateway.erasure_order import MARGIN_MS, snowflake_after
from bot.settings import Settings
from memory import ChatInfo, MemoryEngine

# Chats a wipe deletes whole, name included: an import can be imported again under its name,
# and a DM chat's name holds the person's username ("dm-<username>").
DELETED_WHOLE = ("imported", "dm")


def now_snowflake() -> int:
    """Now as a Discord snowflake, with the erasures' margin (bot/gateway/erasure_order.py)."""
    return snowflake_after(discord.utils.time_snowflake(discord.utils.utcnow()), MARGIN_MS / 1000)


def register(subs: Any, handlers: dict[str, Any]) -> None:
    p = subs.add_parser(
        "forget",
        help="erase everything one person wrote: in one guild ('dm' for their DMs), or in every chat",
    )
    p.add_argument(
        "--guild", type=guild_or_dm, help="a guild id, or 'dm'; leave out to erase them from every chat"
    )
    p.add_argument("--user", required=True, type=snowflake)
    p = subs.add_parser("wipe", help="erase one chat's whole memory (every message and line)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--chat", type=chat_name, help="the chat's name, or its Discord channel id")
    which.add_argument(
        "--id", type=chat_id, help="the chat's own id (listed when a name matches several chats)"
    )
    p = subs.add_parser("export", help="write everything one person wrote, in every chat, as JSON")
    p.add_argument("--user", required=True, type=snowflake)
    p.add_argument("--out", metavar="FILE", help="write to this file (default: standard output)")
    handlers.update(forget=cmd_forget, wipe=cmd_wipe, export=cmd_export)


async def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    async with _engine(settings) as engine:
        export = await engine.export_person(args.user, None, everywhere=True)
    text = export.render()
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        await asyncio.to_thread(write_new, args.out, text)
    except OSError as exc:
        raise CliError(f"cannot write {args.out}: {exc.strerror or exc}; choose another --out") from None
    print(f"wrote {len(export.messages)} messages of user {args.user} to {args.out}", file=sys.stderr)
    return 0


def write_new(path: str, text: str) -> None:
    with open(path, "x", encoding="utf-8") as file:  # never overwrite: it may be another's
        file.write(text)


async def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    scope = args.guild.strip().lower() if args.guild is not None else None
    if scope is not None and scope not in ("dm", "0") and not scope.isdigit():
        raise CliError("--guild takes a Discord guild id, or 'dm' for direct messages")
    async with _engine(settings) as engine:
        if scope is None:
            report = await engine.erase_author_everywhere(args.user)
        else:
            report = await engine.erase_author(None if scope in ("dm", "0") else int(scope), args.user)
        await engine.purge()  # no scheduler here to do it: the erased words leave the files now
        unreachable = await engine.chats_known_by_name(
            None if scope is None or scope in ("dm", "0") else int(scope)
        )
    print(f"erased {report.messages} messages in {report.chats} chats; {report.nodes} lines will be rebuilt")
    if unreachable:
        names = ", ".join(repr(name) for name in unreachable)
        print(
            f"not searched: {len(unreachable)} chat(s) know some authors only by name, not by Discord id: "
            f"{names}; erase one with `eva wipe --chat NAME`"
        )
    return 0


async def cmd_wipe(args: argparse.Namespace, settings: Settings) -> int:
    async with _engine(settings) as engine:
        chat = await chosen_chat(engine, args.chat, args.id)
        if chat.kind in DELETED_WHOLE:
            report = await engine.delete_chat(chat.id)
        else:  # a live channel keeps its settings (paused or not), as /memory wipe does
            # A running bot never logs a message older than this wipe (our clock: no press here).
            report = await engine.wipe_chat(chat.id, moment=now_snowflake)
        await engine.purge()
    print(f"wiped chat {chat.name!r}: {report.messages} messages and {report.nodes} lines erased")
    return 0


async def chosen_chat(engine: MemoryEngine, ref: str | None, own_id: int | None) -> ChatInfo:
    """The one chat a wipe erases: by its own id, or by ``--chat`` when exactly one chat
    matches; several matches (an import may share a live channel's name) are listed, and
    nothing is erased."""
    if own_id is not None:
        chat = await engine.chat(own_id)
        if chat is None:
            raise CliError(f"no chat has the id {own_id}")
        return chat
    assert ref is not None  # argparse requires --chat or --id
    matches = await engine.find_chats(ref)
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise CliError(f"no chat named {ref!r} (see `eva stats` for the list of chats)")
    counts = [await engine.message_count(chat.id) for chat in matches]
    raise CliError(ambiguous_chats(ref, matches, counts))


def ambiguous_chats(ref: str, chats: Sequence[ChatInfo], messages: Sequence[int]) -> str:
    """The refusal for a ``--chat`` several chats match: one line each, and how to choose."""
    lines = [f"{len(chats)} chats match {ref!r}; nothing was wiped. Choose one with `eva wipe --id ID`:"]
    for chat, count in zip(chats, messages, strict=True):
        where = f"guild {chat.guild_id}" if chat.guild_id is not None else "no guild"
        channel = f", Discord channel {chat.discord_id}" if chat.discord_id is not None else ""
        lines.append(f"  id {chat.id}: {chat.kind} {chat.name!r}, {where}{channel}, {count} messages")
    return "\n".join(lines)
