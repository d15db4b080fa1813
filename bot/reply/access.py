"""Whose reply may read a chat's memory (docs/design.md section 9; docs/security.md, Isolation).

A reply reads what its asker may read. In a server, the memory of a channel answers only
someone Discord lets read that channel's past: View Channel and Read Message History there, the
two permissions /zoom and /recall require. A thread has no permissions of its own: Discord
applies its parent channel's (discord.py's ``Thread.permissions_for``), and a private thread is
open only to its members and to those who manage threads, which the asker is, having just
written in it. A DM is always the person's own.

Anyone else is still answered, from a turn of their own without the memory: no row, no tail,
no zoom or recall (forget_me stays: it erases the asker's own messages and reads nothing), only
their own triggers of the turn, shown in its note, with their own files (not those of a message
they reply to), and the reply ends with WITHOUT_MEMORY_LINE so they know why Eva does not
remember here. A turn that answers several people (the reply cog's queue) is split: the askers
who may read, together, with the memory; each other asker alone, without it. Splitting rather
than withholding the memory from the whole turn keeps one person's permissions from making
everyone else's answers poorer, and a turn without the memory costs only a short request.

Unknown means no: a channel discord.py has not cached, a thread whose parent is not cached, or
an author who is not a member (a webhook) gets at most what @everyone may read there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

import discord
import structlog

from bot.core.turn import Trigger, TurnNote
from bot.gateway.chats import is_dm, visible
from bot.gateway.ingest import Ingest
from bot.reply.attachments import FileSource
from memory import PromptView

log = structlog.get_logger(__name__)

# Discord's small grey subtext line, after the reply.
WITHOUT_MEMORY_LINE = "-# I don't use my memory of this channel for you: you can't read its message history."


class _Author(Protocol):
    @property
    def id(self) -> int: ...


class Authored(Protocol):
    @property
    def author(self) -> _Author: ...


M = TypeVar("M", bound=Authored)


@dataclass(frozen=True, slots=True)
class TurnGroup(Generic[M]):
    """Triggers answered by one turn (oldest first); ``memory``: the turn reads the chat's."""

    messages: tuple[M, ...]
    memory: bool


def plan_turns(batch: Sequence[M], may_read: Callable[[M], bool]) -> list[TurnGroup[M]]:
    """The turns for ``batch`` (pure), in the order of each turn's last trigger: everyone who
    may read the memory together, with it; each other person alone, without it. A person is
    judged by their latest trigger (it carries the newest roles Discord sent)."""
    latest: dict[int, M] = {message.author.id: message for message in batch}
    readers = {author for author, message in latest.items() if may_read(message)}
    groups: dict[int | None, list[tuple[int, M]]] = {}
    for position, message in enumerate(batch):
        key = None if message.author.id in readers else message.author.id
        groups.setdefault(key, []).append((position, message))
    ordered = sorted(groups.items(), key=lambda item: item[1][-1][0])
    return [TurnGroup(tuple(m for _, m in members), key is None) for key, members in ordered]


def reads_history(message: discord.Message) -> bool:
    """May the author of ``message`` read its channel's past (View Channel and Read Message
    History there)? Always in a DM; never when Discord's answer is not known."""
    channel: Any = message.channel
    if is_dm(channel):
        return True
    guild = message.guild
    if isinstance(channel, discord.PartialMessageable) and guild is not None:
        channel = guild.get_channel_or_thread(channel.id) or channel  # still partial: none
    author = message.author
    try:
        if isinstance(author, discord.Member):
            perms = channel.permissions_for(author)
        elif guild is not None:
            perms = channel.permissions_for(guild.default_role)
        else:
            return False
    except discord.ClientException:  # a thread whose parent channel is not cached
        return False
    allowed = bool(perms.view_channel and perms.read_message_history)
    if not allowed:
        log.info("reply.memory_withheld", channel_id=message.channel.id, user_id=author.id)
    return allowed


async def turn_without_memory(
    ingest: Ingest | None, chat_id: int, timezone: str, batch: Sequence[discord.Message], now: datetime
) -> tuple[PromptView, TurnNote, list[FileSource]]:
    """What a turn without the memory shows: an empty row and tail, the triggers' own words in
    the note (no log index either: it would tell how long the chat is), and their own files."""
    view = PromptView(chat_id, total=0, boundary=0, timezone=timezone)
    triggers = tuple([await shown_trigger(ingest, message) for message in batch])
    return view, TurnNote(now, timezone, triggers, memory=False), own_files(batch)


def own_files(batch: Sequence[discord.Message]) -> list[FileSource]:
    """The files of the triggers themselves (the asker's own), oldest first."""
    return [
        FileSource(f"{message.author.display_name}'s message", tuple(message.attachments))
        for message in batch
        if message.attachments
    ]


async def shown_trigger(ingest: Ingest | None, message: discord.Message, index: int | None = None) -> Trigger:
    """A trigger as the note shows it: by its log index, or (``index`` None) with its words,
    as people see them (mentions as names, a forward as the forwarded message; ``ingest`` None:
    no ingest in this process, mentions stay raw)."""
    if index is not None:
        return Trigger(message.author.display_name, message.author.id, index)
    content, tags = visible(message)
    if ingest is not None:
        content = await ingest.shown_text(message, content)
    text = " ".join([content, *tags]).strip()
    return Trigger(message.author.display_name, message.author.id, None, text)
