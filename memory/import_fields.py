"""The errors and field checks both export readers share (memory/importers.py for JSONL,
memory/import_dce.py for DiscordChatExporter JSON). Error messages never quote message text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any


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
    # Discord ids fit PostgreSQL's bigint (below 2^63); a longer one fails the whole import.
    if not value.isascii() or not value.isdigit() or len(value) > 20 or int(value) >= 2**63:
        raise ImportFormatError(f"{where}: '{field}' is not a Discord id (expected digits)")
    return int(value)


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
