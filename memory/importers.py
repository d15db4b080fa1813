"""Chat-export importers: a JSONL log or a DiscordChatExporter JSON file in, plain records out.

Two source formats (docs/design.md section 3):

- **JSONL**: one object per line, ``{"i", "author", "text", "date", "ref"?, "reply_to"?}``.
  Authors are bare nicks, so ``author_id`` is ``None`` and the name is the only key.
  ``source_id`` is ``str(i)``; ``reply_to`` is a list of earlier indices and we keep the **last**
  (the nearest earlier message, and the one the JSONL -> DCE converter of ``rust.dce.json`` kept,
  so both files of the same chat import to the same replies). ``is_bot`` is true only for the
  bot nicks the data README names (:data:`KNOWN_IRC_BOTS`).
- **DCE**: one JSON document ``{"guild", "channel", "messages": [...], "messageCount"}``.
  ``author_name`` is ``author.nickname`` (the display name DCE resolved: guild nickname, else
  global display name, else username), falling back to ``author.name`` in exports older than
  2.25; ``author_id`` is ``author.id`` (the stable key per-user forgetting needs).
  System messages (joins, pins, calls, renames, thread creation...) are **skipped**: they are
  generated English text, not something a person said. The kept types are those discord.py's
  ``Message.is_system()`` treats as non-system (default, reply, slash/context-menu command
  responses, thread starter), so an import and live ingest log the same kinds of message.
  A reply is ``type == "Reply"`` with ``reference.messageId``; forwards and crossposts also carry
  a ``reference`` but are not replies.

Attachments are one tuple of tagged names, in this order: ``"file:<fileName>"`` for each
attachment, ``"sticker:<name>"`` for each sticker, ``"embed:<title>"`` for each embed with a
title (untitled embeds are link previews whose URL is already in the content).
:func:`message_text` renders them.

Errors are :class:`ImportFormatError` with one line naming the file, where (``line N`` for JSONL
and for JSON syntax errors, ``messages[N]`` for a bad DCE message) and what is wrong. Error
messages never quote message text (privacy: they may end up in logs).

Both readers are lazy: JSONL is read line by line (the #ubuntu file is 18 MB / 100k lines);
DCE is parsed once with the stdlib ``json`` module and records are made one at a time.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from memory.dce_names import channel_names, mentioned_people, role_names

# Bots whose lines the published IRC corpora kept (their data README names them).
KNOWN_IRC_BOTS = frozenset({"ubotu", "ubottu", "wikibugs", "gerrit-wm", "MootBot"})

# DCE message types that are something a person (or an app acting for one) posted. Names for
# the types DCE knows, numbers (as strings) for those it writes as numbers: 0 default,
# 19 reply, 20 slash-command response, 21 thread starter, 23 context-menu command response.
_DCE_KEPT_TYPES = frozenset(
    {"Default", "Reply", "ChatInputCommand", "ContextMenuCommand", "ThreadStarterMessage"}
    | {"0", "19", "20", "21", "23"}
)
_DCE_REPLY_TYPES = frozenset({"Reply", "19"})

AttachmentKind = Literal["file", "sticker", "embed"]
_ATTACHMENT_KINDS: tuple[AttachmentKind, ...] = ("file", "sticker", "embed")


class ImportFormatError(ValueError):
    """The export cannot be read: one line naming the file, where, and what is wrong."""


# The most text one imported message may carry (content, forwarded content and attachment
# names). Discord itself allows 4,000 characters (2,000 without Nitro); four times that leaves
# room for forwards and long file names. A bigger "message" is a broken export, and PostgreSQL
# refuses one past its tsvector limit (1 MB), failing the whole import.
MAX_MESSAGE_CHARS = 16_000


def _check_size(content: str, attachments: Sequence[str], where: str) -> None:
    size = len(content) + sum(len(item) for item in attachments)
    if size > MAX_MESSAGE_CHARS:
        raise ImportFormatError(
            f"{where}: the message has {size:,} characters, more than the {MAX_MESSAGE_CHARS:,} "
            "an imported message may have; shorten or remove it"
        )


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
    # parent). See memory/mentions.py.
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


def detect_format(path: str | os.PathLike[str]) -> Literal["jsonl", "dce"]:
    """``"dce"`` for one JSON document with a ``messages`` list, ``"jsonl"`` for one object a line.

    Decided from the first line: DCE writes its document indented, so its first line is a lone
    ``{``; a one-line document is DCE when it has ``messages`` and ``guild`` or ``channel``.
    """
    file = Path(path)
    first, line_number = b"", 0
    try:
        with file.open("rb") as stream:
            while not first.strip():
                # 1 MiB is far more than any JSONL message line; a longer line is a compact DCE.
                first = stream.readline(1 << 20)
                line_number += 1
                if not first:
                    raise ImportFormatError(f"{file.name}: empty file (no messages)")
    except OSError as exc:
        raise ImportFormatError(f"{file.name}: cannot read ({exc.strerror or exc})") from exc
    stripped = first.removeprefix(b"\xef\xbb\xbf").strip()
    if not stripped.startswith(b"{"):
        raise ImportFormatError(
            f"{file.name} line {line_number}: not a JSON object (neither JSONL nor DCE JSON)"
        )
    if stripped == b"{" or (len(first) >= 1 << 20 and not first.endswith(b"\n")):
        return "dce"
    try:
        head = json.loads(stripped)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "jsonl"  # read_jsonl reports the line-1 error with its number
    if isinstance(head, dict) and "messages" in head and ("guild" in head or "channel" in head):
        return "dce"
    return "jsonl"


def read_any(path: str | os.PathLike[str]) -> Iterator[ImportedMessage]:
    """Read a JSONL or DCE export, whichever it is."""
    return read_dce(path) if detect_format(path) == "dce" else read_jsonl(path)


def count_messages(path: str | os.PathLike[str]) -> int:
    """A cheap message count for a progress bar.

    JSONL: the non-blank lines. DCE: ``messageCount`` read from the end of the file (DCE writes
    it after the array), else ``len(messages)``; it includes the system messages the reader
    skips, so it is an upper bound there.
    """
    file = Path(path)
    if detect_format(file) == "jsonl":
        with file.open("rb") as stream:
            return sum(1 for raw in stream if raw.strip())
    with file.open("rb") as stream:
        size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - 4096))
        tail = stream.read()
    found = re.search(rb'"messageCount"\s*:\s*(\d+)\s*}\s*$', tail)
    if found:
        return int(found.group(1))
    return len(_load_dce(file)[0])


# ---------------------------------------------------------------------------------------------
# JSONL


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[ImportedMessage]:
    """Read the JSONL chat format lazily, one line at a time.

    A missing or empty file fails at once; a bad line fails when the reader reaches it.
    Blank lines are skipped. Dates are parsed, not checked for order (the caller decides).
    """
    file = Path(path)
    try:
        size = file.stat().st_size
    except OSError as exc:
        raise ImportFormatError(f"{file.name}: cannot read ({exc.strerror or exc})") from exc
    if size == 0:
        raise ImportFormatError(f"{file.name}: empty file (no messages)")
    return _iter_jsonl(file)


def _iter_jsonl(file: Path) -> Iterator[ImportedMessage]:
    name = file.name
    produced = 0
    with file.open("rb") as stream:
        for line_number, raw in enumerate(stream, start=1):
            if line_number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark some editors write
            if not raw.strip():
                continue
            where = f"{name} line {line_number}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ImportFormatError(f"{where}: not valid UTF-8 (byte {exc.start} of the line)") from exc
            try:
                record = json.loads(text)
            except RecursionError:  # "[[[[...": json gives up past ~1,000 levels
                raise ImportFormatError(f"{where}: nested too deeply (not a message)") from None
            except ValueError as exc:
                if not raw.endswith(b"\n"):
                    raise ImportFormatError(f"{where}: truncated (the file ends inside this line)") from exc
                raise ImportFormatError(f"{where}: not valid JSON ({_json_reason(exc)})") from exc
            if not isinstance(record, dict):
                raise ImportFormatError(f"{where}: expected a JSON object, got {_type_name(record)}")
            yield _jsonl_message(record, where)
            produced += 1
    if produced == 0:
        raise ImportFormatError(f"{name}: empty file (no messages)")


def _jsonl_message(record: dict[str, Any], where: str) -> ImportedMessage:
    author = _require_str(record, "author", where)
    text = _require_str(record, "text", where)
    created = _parse_time(record.get("date"), "date", where, required=True)
    index = record.get("i")
    if index is not None and not _is_int(index):
        raise ImportFormatError(f"{where}: 'i' must be an integer, got {_type_name(index)}")
    replies = record.get("reply_to")
    reply_to: str | None = None
    if replies is not None:
        if not isinstance(replies, list) or not all(_is_int(item) for item in replies):
            raise ImportFormatError(f"{where}: 'reply_to' must be a list of integers")
        if replies:
            reply_to = str(replies[-1])  # the nearest earlier message (see module docstring)
    assert created is not None
    _check_size(text, (), where)
    return ImportedMessage(
        author_id=None,
        author_name=author,
        is_bot=author in KNOWN_IRC_BOTS,
        created_at=created,
        edited_at=None,
        content=text,
        attachments=(),
        reply_to_source=reply_to,
        source_id=None if index is None else str(index),
        snowflake=None,
    )


# ---------------------------------------------------------------------------------------------
# DiscordChatExporter JSON


def read_dce(path: str | os.PathLike[str]) -> Iterator[ImportedMessage]:
    """Read a DiscordChatExporter JSON export: parsed now, records made lazily, system messages skipped.

    File-level problems (missing, bad UTF-8, bad JSON, no ``messages`` list) fail at once; a bad
    message fails when the reader reaches it.
    """
    return open_export(path)[1]


def open_export(path: str | os.PathLike[str]) -> tuple[ExportOrigin, Iterator[ImportedMessage]]:
    """The export's origin and its messages (JSONL or DCE, whichever it is), parsed once."""
    file = Path(path)
    if detect_format(file) == "jsonl":
        return ExportOrigin(), read_jsonl(file)
    messages, name, document = _load_dce_document(file)
    return _dce_origin(document, name), _iter_dce(messages, name, channel_names(document))


def _dce_origin(document: dict[str, Any], name: str) -> ExportOrigin:
    ids: list[int | None] = []
    for key in ("guild", "channel"):
        part = document.get(key)
        raw = part.get("id") if isinstance(part, dict) else None
        if raw is None:
            ids.append(None)
            continue
        if not isinstance(raw, str):
            raise ImportFormatError(f"{name}: '{key}.id' must be a string, got {_type_name(raw)}")
        ids.append(_snowflake(raw, f"{key}.id", name))
    guild, channel = ids
    return ExportOrigin(guild_id=guild or None, channel_id=channel)  # guild "0": a DM export


def _load_dce(file: Path) -> tuple[list[Any], str]:
    messages, name, _document = _load_dce_document(file)
    return messages, name


def _load_dce_document(file: Path) -> tuple[list[Any], str, dict[str, Any]]:
    name = file.name
    try:
        with file.open("r", encoding="utf-8-sig", errors="strict") as stream:
            document = json.load(stream)
    except OSError as exc:
        raise ImportFormatError(f"{name}: cannot read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{name}: not valid UTF-8 (near byte {exc.start})") from exc
    except RecursionError:  # "[[[[...": json gives up past ~1,000 levels
        raise ImportFormatError(f"{name}: nested too deeply (not a DiscordChatExporter export)") from None
    except json.JSONDecodeError as exc:
        if not exc.doc.rstrip().endswith("}"):  # a whole DCE document ends with its closing brace
            raise ImportFormatError(
                f"{name} line {exc.lineno}: truncated (the JSON document ends early)"
            ) from exc
        raise ImportFormatError(f"{name} line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(document, dict):
        raise ImportFormatError(f"{name}: expected a JSON object, got {_type_name(document)}")
    messages = document.get("messages")
    if not isinstance(messages, list):
        raise ImportFormatError(f"{name}: no 'messages' list (not a DiscordChatExporter JSON export)")
    return messages, name, document


def _iter_dce(
    messages: list[Any], name: str, channels: tuple[tuple[int, str], ...] = ()
) -> Iterator[ImportedMessage]:
    for position, message in enumerate(messages):
        where = f"{name} messages[{position}]"
        if not isinstance(message, dict):
            raise ImportFormatError(f"{where}: expected a JSON object, got {_type_name(message)}")
        kind = message.get("type", "Default")
        if not isinstance(kind, str):
            raise ImportFormatError(f"{where}: 'type' must be a string, got {_type_name(kind)}")
        if kind not in _DCE_KEPT_TYPES:
            continue  # a system message: generated text, not something anyone said
        yield _dce_message(message, kind, where, channels)


def _dce_message(
    message: dict[str, Any], kind: str, where: str, channels: tuple[tuple[int, str], ...] = ()
) -> ImportedMessage:
    source_id = _require_str(message, "id", where)
    snowflake = _snowflake(source_id, "id", where)
    author = message.get("author")
    if not isinstance(author, dict):
        raise ImportFormatError(f"{where}: 'author' must be an object, got {_type_name(author)}")
    author_id = _snowflake(_require_str(author, "id", f"{where} author"), "author.id", where)
    display = author.get("nickname") or author.get("name")
    if not isinstance(display, str) or not display:
        raise ImportFormatError(f"{where}: the author has neither 'nickname' nor 'name'")
    is_bot = author.get("isBot", False)
    if not isinstance(is_bot, bool):
        raise ImportFormatError(f"{where}: 'author.isBot' must be true or false")
    created = _parse_time(message.get("timestamp"), "timestamp", where, required=True)
    edited = _parse_time(message.get("timestampEdited"), "timestampEdited", where, required=False)
    content = _optional_str(message, "content", where)
    mentions, mentioned = mentioned_people(message)
    attachments = _dce_attachments(message, where)
    forwarded = message.get("forwardedMessage")
    if isinstance(forwarded, dict):
        # A forward (DCE 2.47+) shows the forwarded message's content in the channel.
        inner = _optional_str(forwarded, "content", where)
        if inner:
            content = f"{content}\n[forwarded] {inner}" if content else f"[forwarded] {inner}"
        attachments += _dce_attachments(forwarded, where)
    reply_to: str | None = None
    reference = message.get("reference")
    if kind in _DCE_REPLY_TYPES and isinstance(reference, dict):
        replied = reference.get("messageId")
        if replied is not None and not isinstance(replied, str):
            raise ImportFormatError(f"{where}: 'reference.messageId' must be a string")
        reply_to = replied or None
    assert created is not None
    _check_size(content, attachments, where)
    return ImportedMessage(
        author_id=author_id,
        author_name=display,
        is_bot=is_bot,
        created_at=created,
        edited_at=edited,
        content=content,
        attachments=attachments,
        reply_to_source=reply_to,
        source_id=source_id,
        snowflake=snowflake,
        mentions=mentions,
        roles=role_names([author, *mentioned]),
        channels=channels,
    )


def _dce_attachments(message: dict[str, Any], where: str) -> tuple[str, ...]:
    names: list[str] = []
    for key, field, kind, required in (
        ("attachments", "fileName", "file", True),
        ("stickers", "name", "sticker", True),
        ("embeds", "title", "embed", False),
    ):
        items = message.get(key) or []
        if not isinstance(items, list):
            raise ImportFormatError(f"{where}: '{key}' must be a list, got {_type_name(items)}")
        for item in items:
            value = item.get(field) if isinstance(item, dict) else None
            if isinstance(value, str) and value:
                names.append(f"{kind}:{value}")
            elif required:
                raise ImportFormatError(f"{where}: an item of '{key}' has no '{field}' string")
    return tuple(names)


# ---------------------------------------------------------------------------------------------
# Field checks shared by both formats


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}.get(
        type(value), type(value).__name__
    )


def _json_reason(exc: ValueError) -> str:
    return exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__


def _require_str(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if value is None and key not in record:
        raise ImportFormatError(f"{where}: missing '{key}'")
    if not isinstance(value, str):
        raise ImportFormatError(f"{where}: '{key}' must be a string, got {_type_name(value)}")
    return value


def _optional_str(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ImportFormatError(f"{where}: '{key}' must be a string, got {_type_name(value)}")
    return value


def _snowflake(value: str, field: str, where: str) -> int:
    # Discord ids fit PostgreSQL's bigint (below 2^63); a longer one fails the whole import.
    if not value.isascii() or not value.isdigit() or len(value) > 20 or int(value) >= 2**63:
        raise ImportFormatError(f"{where}: '{field}' is not a Discord id (expected digits)")
    return int(value)


def _parse_time(value: object, field: str, where: str, *, required: bool) -> datetime | None:
    """An ISO 8601 time with a UTC offset, converted to UTC. A time without an offset is refused:
    it could be any zone (DCE writes the exporter's local time unless run with --utc)."""
    if value is None:
        if required:
            raise ImportFormatError(f"{where}: missing '{field}'")
        return None
    if not isinstance(value, str):
        raise ImportFormatError(f"{where}: '{field}' must be a string, got {_type_name(value)}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ImportFormatError(f"{where}: '{field}' is not an ISO 8601 time: {value[:40]!r}") from exc
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ImportFormatError(f"{where}: '{field}' has no UTC offset (add 'Z' or '+00:00'): {value[:40]!r}")
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # "0001-01-01T00:00:00+05:00" is before year 1 in UTC
        raise ImportFormatError(f"{where}: '{field}' is out of range: {value[:40]!r}") from None
