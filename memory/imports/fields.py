"""The errors and field checks both export readers share (memory/imports/readers.py for JSONL,
memory/imports/dce.py for DiscordChatExporter JSON). Error messages never quote message text."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

from memory.discord_ids import RANGE_TEXT, is_digits, parse_discord_id
from memory.text.records import ImportedMessage


class ImportFormatError(ValueError):
    """The export cannot be read: one line naming the file, where, and what is wrong."""


# The most text one imported message may carry (content, forwarded content and attachment
# names). Discord itself allows 4,000 characters (2,000 without Nitro); four times that leaves
# room for forwards and long file names. A bigger "message" is a broken export, and PostgreSQL
# refuses one past its tsvector limit (1 MB), failing the whole import.
MAX_MESSAGE_CHARS = 16_000


def check_size(content: str, attachments: Sequence[str], where: str) -> None:
    size = len(content) + sum(len(item) for item in attachments)
    if size > MAX_MESSAGE_CHARS:
        raise ImportFormatError(
            f"{where}: the message has {size:,} characters, more than the {MAX_MESSAGE_CHARS:,} "
            "an imported message may have; shorten or remove it"
        )


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def type_name(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}.get(
        type(value), type(value).__name__
    )


def json_reason(exc: ValueError) -> str:
    return exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__


def require_str(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if value is None and key not in record:
        raise ImportFormatError(f"{where}: missing '{key}'")
    if not isinstance(value, str):
        raise ImportFormatError(f"{where}: '{key}' must be a string, got {type_name(value)}")
    return value


def optional_str(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ImportFormatError(f"{where}: '{key}' must be a string, got {type_name(value)}")
    return value


def parse_snowflake(value: str, field: str, where: str) -> int:
    """A Discord id by the rule `eva forget --user` applies (memory/discord_ids.py): an author
    id outside it could be imported but never erased, so the file is refused instead."""
    number = parse_discord_id(value)
    if number is not None:
        return number
    if not is_digits(value):
        raise ImportFormatError(f"{where}: '{field}' is not a Discord id (expected digits)")
    shown = value if len(value) <= 24 else value[:24] + "..."
    if field == "author.id":
        raise ImportFormatError(
            f"{where}: 'author.id' {shown} is no Discord account's id ({RANGE_TEXT}), so "
            "`eva forget --user` could never erase this author; give the author their real id"
        )
    raise ImportFormatError(f"{where}: '{field}' {shown} is not a Discord id ({RANGE_TEXT})")


def parse_time(value: object, field: str, where: str, *, required: bool) -> datetime | None:
    """An ISO 8601 time with a UTC offset, converted to UTC. A time without an offset is refused:
    it could be any zone (DCE writes the exporter's local time unless run with --utc)."""
    if value is None:
        if required:
            raise ImportFormatError(f"{where}: missing '{field}'")
        return None
    if not isinstance(value, str):
        raise ImportFormatError(f"{where}: '{field}' must be a string, got {type_name(value)}")
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


class MessageIds:
    """The ids an export has given its messages so far, for one rule on repeats.

    An id names one message. Another message under an id already seen is either the same
    message twice (every field equal, as when two overlapping exports were joined into one
    file), which is kept once and counted in :attr:`repeats`, or a different message, and then
    the file is refused: only one message can be stored under a Discord id, and a reply to it
    could mean either, so keeping one would lose the other and might point replies at the wrong
    one. Remembered per id: where it was first seen and a 64-bit hash of that whole record
    (about 200 bytes a message: 20 MB for the 103,683 lines of ubuntu-stream-1.jsonl), so "the
    same" means the same hash (a different message with the same id and hash: 1 in 2^64);
    ``earlier`` reads the first one again to name what differs.
    """

    def __init__(
        self,
        key_label: str,
        field_labels: Mapping[str, str],
        earlier: Callable[[int], tuple[str, ImportedMessage]],
    ) -> None:
        self._key_label, self._field_labels, self._earlier = key_label, field_labels, earlier
        self._seen: dict[int, tuple[int, int]] = {}  # id -> (position, hash of the record)
        self.repeats = 0

    def is_new(self, key: int, position: int, record: ImportedMessage, where: str) -> bool:
        """True for a first sighting, False for a repeat of the same message; raises
        ImportFormatError for a different message under a seen id."""
        fingerprint = hash(record)
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = (position, fingerprint)
            return True
        if seen[1] == fingerprint:
            self.repeats += 1
            return False
        first_where, first = self._earlier(seen[0])
        differing = [f.name for f in fields(record) if getattr(first, f.name) != getattr(record, f.name)]
        label = self._field_labels.get(differing[0], differing[0]) if differing else "a field"
        raise ImportFormatError(
            f"{where}: {self._key_label} {key} is already the {self._key_label} of {first_where}, "
            f"a different message (its {label} differs); keep one of the two and import again"
        )


class ExportRecords(Iterator[ImportedMessage]):
    """An export's messages, read lazily, and how many repeats of a message were left out so far."""

    def __init__(self, records: Iterator[ImportedMessage], ids: MessageIds | None = None) -> None:
        self._records, self._ids = records, ids

    def __iter__(self) -> ExportRecords:
        return self

    def __next__(self) -> ImportedMessage:
        return next(self._records)

    @property
    def repeats(self) -> int:
        return self._ids.repeats if self._ids is not None else 0
