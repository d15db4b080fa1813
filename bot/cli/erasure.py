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

import discord

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


NO_TERMINAL = (
    "nothing was erased: there is no terminal to ask on; add --yes to erase without asking "
    "(or --dry-run to see what would go)"
)


def refuse_without_terminal(args: argparse.Namespace) -> None:
    """Before anything is opened: an erasure nobody can confirm is refused in one line."""
    if not args.yes and not args.dry_run and not sys.stdin.isatty():
        raise CliError(NO_TERMINAL)


async def confirmed(args: argparse.Namespace, preview: str) -> bool:
    """Show what will go, then: --dry-run stops, --yes goes on, else the person answers."""
    print(preview)
    if args.dry_run:
        print("dry run: nothing was erased")
        return False
    if args.yes:
        return True
    # The prompt waits for a person; a thread keeps the event loop (and the database) alive.
    try:
        answer = await asyncio.to_thread(input, "Erase it? This cannot be undone. [y/N] ")
    except EOFError:  # the terminal closed (Ctrl-D): no answer is a no
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("nothing was erased")
    return False


def forget_preview(user: int, scope: int | None, chats: Sequence[tuple[str, int]]) -> str:
    where = {None: "every chat", 0: "their DMs with the bot"}.get(scope, f"guild {scope}")
    lines = [f"eva forget erases what user {user} wrote in {where}:"]
    lines += [f"  {name!r}: {count} messages" for name, count in chats] or [
        "  no message of theirs is stored"
    ]
    lines.append(
        "and their name where others mention them; the bot's replies to them in DMs go whole. "
        "The memory lines built over these messages are removed and rebuilt without them."
    )
    return "\n".join(lines)


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
    guild = None if scope is None else 0 if scope in ("dm", "0") else int(scope)
    refuse_without_terminal(args)
    async with _engine(settings) as engine:
        chats = await engine.authored_by_chat(args.user, guild)
        if not await confirmed(args, forget_preview(args.user, guild, chats)):
            return 0 if args.dry_run else 1
        if guild is None:
            report = await engine.erase_author_everywhere(args.user)
        else:
            report = await engine.erase_author(guild or None, args.user)
        await engine.purge()  # no scheduler here to do it: the erased words leave the files now
        unreachable = await engine.chats_known_by_name(guild or None)
    print(
        f"erased {report.messages} messages in {report.chats} chats, and the {report.nodes} memory lines "
        "built over them; the running bot's compactor writes those lines again without them, or run "
        "`eva compact --chat NAME` for each chat now"
    )
    if unreachable:
        names = ", ".join(repr(name) for name in unreachable)
        print(
            f"not searched: {len(unreachable)} chat(s) know some authors only by name, not by Discord id: "
            f"{names}; erase one with `eva wipe --chat NAME`"
        )
    return 0


async def cmd_wipe(args: argparse.Namespace, settings: Settings) -> int:
    refuse_without_terminal(args)
    async with _engine(settings) as engine:
        chat = await chosen_chat(engine, args.chat, args.id)
        whole = chat.kind in DELETED_WHOLE
        count = await engine.message_count(chat.id)
        kept = "the chat itself goes too (name included)" if whole else "the channel's settings stay"
        preview = (
            f"eva wipe erases chat {chat.name!r} (id {chat.id}, {chat.kind}): {count} messages and "
            f"every memory line; {kept}"
        )
        if not await confirmed(args, preview):
            return 0 if args.dry_run else 1
        if whole:
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
