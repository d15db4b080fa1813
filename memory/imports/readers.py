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

Both readers are lazy: JSONL is read line by line (the #ubuntu file is 18 MB / 100k lines),
no line longer than 1 MiB; DCE is parsed once with the stdlib ``json`` module, from a file of
at most 256 MiB, and records are made one at a time (memory/file_limits.py says why).

A message id (DCE ``id``, JSONL ``i``) names one message: the same message twice is kept
once, a different message under a seen id refuses the file (:class:`MessageIds`). Author ids
follow the rule `eva forget --user` does (memory/discord_ids.py), so each can be erased.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal

from memory.file_limits import JSONL_LINE_BYTES, size_text
from memory.imports.dce import load_dce, open_dce
from memory.imports.fields import (
    MAX_MESSAGE_CHARS,
    ExportRecords,
    ImportFormatError,
    MessageIds,
    check_size,
    is_int,
    json_reason,
    parse_time,
    require_str,
    type_name,
)
from memory.text.records import ExportOrigin, ImportedMessage, message_text

__all__ = [
    "MAX_MESSAGE_CHARS",
    "ExportOrigin",
    "ExportRecords",
    "ImportFormatError",
    "ImportedMessage",
    "count_messages",
    "detect_format",
    "message_text",
    "open_export",
    "read_any",
    "read_dce",
    "read_jsonl",
]

# Bots whose lines the published IRC corpora kept (their data README names them).
KNOWN_IRC_BOTS = frozenset({"ubotu", "ubottu", "wikibugs", "gerrit-wm", "MootBot"})


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
                # A longer line than any JSONL message line may be is a compact DCE.
                first = stream.readline(JSONL_LINE_BYTES)
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
    if stripped == b"{" or (len(first) >= JSONL_LINE_BYTES and not first.endswith(b"\n")):
        return "dce"
    try:
        head = json.loads(stripped)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "jsonl"  # read_jsonl reports the line-1 error with its number
    if isinstance(head, dict) and "messages" in head and ("guild" in head or "channel" in head):
        return "dce"
    if isinstance(head, dict) and not {"author", "text", "date"} & head.keys():
        # Some other JSON: "line 1: missing 'author'" would send a host looking for one field.
        raise ImportFormatError(
            f"{file.name}: not a chat export: expected a JSONL chat log (one message a line, with "
            "'author', 'text' and 'date') or DiscordChatExporter's JSON (guild, channel, messages)"
        )
    return "jsonl"


def read_any(path: str | os.PathLike[str]) -> ExportRecords:
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
            return sum(1 for _, raw in _lines(stream, file.name) if raw.strip())
    with file.open("rb") as stream:
        size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - 4096))
        tail = stream.read()
    found = re.search(rb'"messageCount"\s*:\s*(\d+)\s*}\s*$', tail)
    if found:
        return int(found.group(1))
    return len(load_dce(file)[0])


# ---------------------------------------------------------------------------------------------
# JSONL


def read_jsonl(path: str | os.PathLike[str]) -> ExportRecords:
    """Read the JSONL chat format lazily, one line at a time.

    A missing or empty file fails at once; a bad line fails when the reader reaches it.
    Blank lines are skipped. Dates are parsed, not checked for order (the caller decides).
    A repeated ``i`` follows :class:`MessageIds`: the same line twice is kept once.
    """
    file = Path(path)
    try:
        size = file.stat().st_size
    except OSError as exc:
        raise ImportFormatError(f"{file.name}: cannot read ({exc.strerror or exc})") from exc
    if size == 0:
        raise ImportFormatError(f"{file.name}: empty file (no messages)")
    ids = MessageIds("'i'", _JSONL_FIELDS, lambda line: _jsonl_line(file, line))
    return ExportRecords(_iter_jsonl(file, ids), ids)


# What a JSONL line calls the fields of a record, for "its 'text' differs".
_JSONL_FIELDS = {"author_name": "'author'", "is_bot": "'author'", "created_at": "'date'",
                 "content": "'text'", "reply_to_source": "'reply_to'"}  # fmt: skip


def _lines(stream: BinaryIO, name: str) -> Iterator[tuple[int, bytes]]:
    """The file's lines with their numbers, none longer than JSONL_LINE_BYTES (a line is read
    whole, so it is what an endless line would fill memory with)."""
    line_number = 0
    while raw := stream.readline(JSONL_LINE_BYTES + 1):
        line_number += 1
        if len(raw) > JSONL_LINE_BYTES:
            raise ImportFormatError(
                f"{name} line {line_number}: longer than {size_text(JSONL_LINE_BYTES)}, the most a "
                "JSONL line may be (one line holds one message); split or remove it"
            )
        yield line_number, raw


def _jsonl_records(file: Path) -> Iterator[tuple[int, ImportedMessage]]:
    name = file.name
    with file.open("rb") as stream:
        for line_number, raw in _lines(stream, name):
            if line_number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark some editors write
            if not raw.strip():
                continue
            yield line_number, _parse_line(raw, f"{name} line {line_number}")


def _iter_jsonl(file: Path, ids: MessageIds) -> Iterator[ImportedMessage]:
    produced = 0
    for line_number, record in _jsonl_records(file):
        produced += 1
        index = record.source_id
        if index is None or ids.is_new(int(index), line_number, record, f"{file.name} line {line_number}"):
            yield record
    if produced == 0:
        raise ImportFormatError(f"{file.name}: empty file (no messages)")


def _jsonl_line(file: Path, wanted: int) -> tuple[str, ImportedMessage]:
    """The record of line ``wanted`` again (a rare path: naming what a repeat changed)."""
    for line_number, record in _jsonl_records(file):
        if line_number == wanted:
            return f"line {line_number}", record
    raise ImportFormatError(f"{file.name} line {wanted}: changed while it was being read")


def _parse_line(raw: bytes, where: str) -> ImportedMessage:
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
        raise ImportFormatError(f"{where}: not valid JSON ({json_reason(exc)})") from exc
    if not isinstance(record, dict):
        raise ImportFormatError(f"{where}: expected a JSON object, got {type_name(record)}")
    return _jsonl_message(record, where)


def _jsonl_message(record: dict[str, Any], where: str) -> ImportedMessage:
    author = require_str(record, "author", where)
    text = require_str(record, "text", where)
    created = parse_time(record.get("date"), "date", where, required=True)
    index = record.get("i")
    if index is not None and not is_int(index):
        raise ImportFormatError(f"{where}: 'i' must be an integer, got {type_name(index)}")
    replies = record.get("reply_to")
    reply_to: str | None = None
    if replies is not None:
        if not isinstance(replies, list) or not all(is_int(item) for item in replies):
            raise ImportFormatError(f"{where}: 'reply_to' must be a list of integers")
        if replies:
            reply_to = str(replies[-1])  # the nearest earlier message (see module docstring)
    assert created is not None
    check_size(text, (), where)
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


def read_dce(path: str | os.PathLike[str]) -> ExportRecords:
    """Read a DiscordChatExporter JSON export: parsed now, records made lazily, system messages skipped.

    File-level problems (missing, bad UTF-8, bad JSON, no ``messages`` list) fail at once; a bad
    message fails when the reader reaches it.
    """
    return open_export(path)[1]


def open_export(path: str | os.PathLike[str]) -> tuple[ExportOrigin, ExportRecords]:
    """The export's origin and its messages (JSONL or DCE, whichever it is), parsed once."""
    file = Path(path)
    if detect_format(file) == "jsonl":
        return ExportOrigin(), read_jsonl(file)
    return open_dce(file)
