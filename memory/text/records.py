"""A message as an export gives it, before it gets its log index, and the text the memory
stores for it (:func:`message_text`). Shared by the export readers (memory/imports/readers.py), the
log (memory/storage/log.py), erasure and the bot's reconcile, which need the shape but not the parsers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

AttachmentKind = Literal["file", "sticker", "embed"]
_ATTACHMENT_KINDS: tuple[AttachmentKind, ...] = ("file", "sticker", "embed")


@dataclass(frozen=True, slots=True)
class ExportOrigin:
    """Where an export came from: a DiscordChatExporter file names its guild and channel.

    ``guild_id`` is None for a DM export (DCE writes guild id "0") and for JSONL files.
    """

    guild_id: int | None = None
    channel_id: int | None = None


@dataclass(frozen=True, slots=True)
class ImportedMessage:
    """One message of an export, before it gets its log index."""

    author_id: int | None  # Discord user id; None for JSONL (nicks only)
    author_name: str
    is_bot: bool
    created_at: datetime  # tz-aware, UTC
    edited_at: datetime | None  # tz-aware, UTC
    content: str
    attachments: tuple[str, ...]  # "file:a.png", "sticker:wave", "embed:Title"
    reply_to_source: str | None  # source id of the replied message; the caller maps it to an index
    source_id: str | None  # DCE message id, or str(i) for JSONL
    snowflake: int | None  # DCE message id as an int; None for JSONL
    # What the export says the ids in ``content`` are called (DCE only): the people it
    # mentions (id, display name), the roles it knows, the exported channel (and a thread's
    # parent). See memory/text/mentions.py.
    mentions: tuple[tuple[int, str], ...] = ()
    roles: tuple[tuple[int, str], ...] = ()
    channels: tuple[tuple[int, str], ...] = ()


def message_text(content: str, attachments: Sequence[str] = (), reply_to_index: int | None = None) -> str:
    """The text of a message as the memory sees it (docs/design.md section 4).

    The content word for word, then one bracket per attachment, sticker and embed, then the
    reply note, separated by single spaces::

        "see this [file: map.png] [sticker: wave] [embed: Rust Playground] (reply to #12)"

    ``attachments`` are tagged names as in :class:`ImportedMessage`; an untagged name counts as
    a file. ``reply_to_index`` is the log index of the replied message, or None when it is not
    a reply or the replied message is not in the log.
    """
    parts = [content] if content else []
    for item in attachments:
        kind, name = _split_attachment(item)
        parts.append(f"[{kind}: {name}]")
    if reply_to_index is not None:
        parts.append(f"(reply to #{reply_to_index})")
    return " ".join(parts)


def _split_attachment(item: str) -> tuple[AttachmentKind, str]:
    head, sep, rest = item.partition(":")
    for kind in _ATTACHMENT_KINDS:
        if sep and head == kind:
            return kind, rest
    return "file", item
