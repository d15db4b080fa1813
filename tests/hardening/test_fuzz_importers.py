"""Hostile import files, property-based: JSONL and DiscordChatExporter files that are
truncated, have wrong types, huge or deeply nested lines, bad UTF-8, dates out of range, ids
too big for the database. The readers raise ImportFormatError and nothing else, its one line
never quotes message text, and `eva import` of a file that fails writes nothing at all (one
transaction, even after whole batches were inserted)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.cli.memory_commands import cmd_import
from bot.errors import CliError
from bot.settings import Settings
from memory.imports.readers import ImportedMessage, ImportFormatError, count_messages, read_any
from memory.storage.models import Chat, Message

SECRET = "hushword"  # in every message text: no error may quote it
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
Record = dict[str, Any]


def jsonl_record(k: int) -> Record:
    return {"i": k, "author": f"nick{k % 3}", "text": f"{SECRET} {k}", "date": f"2026-01-01T00:{k % 60:02d}:00Z",
            "reply_to": [k - 1] if k else []}  # fmt: skip


def dce_message(k: int) -> Record:
    return {
        "id": str(900_000_000_000_000_000 + k), "type": "Default", "timestamp": "2026-01-01T10:00:00+00:00",
        "content": f"{SECRET} {k}", "author": {"id": str(100 + k % 3), "name": f"user{k % 3}", "nickname": f"User {k % 3}"},
        "attachments": [], "embeds": [], "stickers": [],
    }  # fmt: skip


def deep(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


JSONL_BREAKS: list[Callable[[Record], Any]] = [
    lambda r: {**r, "date": "yesterday at noon"},
    lambda r: {**r, "date": "0001-01-01T00:00:00+05:00"},  # before year 1 in UTC
    lambda r: {**r, "date": "9999-12-31T23:00:00-05:00"},  # after year 9999 in UTC
    lambda r: {**r, "date": "2026-01-01T00:00:00"},  # no UTC offset
    lambda r: {**r, "text": 5},
    lambda r: {**r, "author": None},
    lambda r: {k: v for k, v in r.items() if k != "text"},
    lambda r: {**r, "reply_to": "seven"},
    lambda r: {**r, "i": 1.5},
    lambda r: [r],
    lambda r: {**r, "text": json.loads(deep(3))},
    lambda r: RawLine(deep()),
    lambda r: RawLine("\xff\xfe not utf-8"),
    lambda r: RawLine('{"author": "a", "text": "cut here'),
]
DCE_BREAKS: list[Callable[[Record], Any]] = [
    lambda m: {**m, "id": "99999999999999999999"},  # 20 digits, over PostgreSQL's bigint
    lambda m: {**m, "id": "12a"},
    lambda m: {**m, "author": {"id": "18446744073709551616", "name": "x"}},
    lambda m: {**m, "author": "alice"},
    lambda m: {**m, "timestamp": "0001-01-01T00:00:00+01:00"},
    lambda m: {**m, "timestamp": 1700000000},
    lambda m: {**m, "attachments": "a.png"},
    lambda m: {**m, "stickers": [None]},
    lambda m: {**m, "type": 19, "reference": {"messageId": 5}},
    lambda m: {**m, "content": {"nested": deep(3)}},
    lambda m: {**m, "content": json.loads(deep(500))},
    lambda m: "just a string",
]


class RawLine(str):
    """A line written as is (not JSON-encoded)."""


def jsonl_bytes(records: list[Any]) -> bytes:
    lines = [r if isinstance(r, RawLine) else json.dumps(r) for r in records]
    return ("\n".join(lines) + "\n").encode("utf-8", errors="surrogateescape")


def dce_bytes(messages: list[Any]) -> bytes:
    document = {"guild": {"id": "1", "name": "g"}, "channel": {"id": "2", "name": "c"}, "messages": messages,
                "messageCount": len(messages)}  # fmt: skip
    return json.dumps(document, indent=2).encode()


@st.composite
def broken_file(draw: st.DrawFn) -> bytes:
    """A file that must fail: a good export with one record broken, truncated or corrupted."""
    count = draw(st.integers(1, 40))
    at = draw(st.integers(0, count - 1))
    if draw(st.booleans()):
        records: list[Any] = [jsonl_record(k) for k in range(count)]
        records[at] = draw(st.sampled_from(JSONL_BREAKS))(records[at])
        return jsonl_bytes(records)
    messages: list[Any] = [dce_message(k) for k in range(count)]
    how = draw(st.sampled_from(["break", "truncate", "bad utf-8"]))
    if how == "break":
        messages[at] = draw(st.sampled_from(DCE_BREAKS))(messages[at])
        return dce_bytes(messages)
    data = dce_bytes(messages)
    cut = draw(st.integers(1, len(data) - 2))
    return data[:cut] if how == "truncate" else data[:cut] + b"\xc3\x28" + data[cut:]


any_bytes = st.one_of(
    st.binary(max_size=3000),
    st.text(max_size=2000).map(lambda t: t.encode("utf-8", errors="surrogatepass")),
    st.lists(st.dictionaries(st.sampled_from(["i", "author", "text", "date", "reply_to", "x"]),
                             st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                                          max_leaves=8), max_size=6), min_size=1, max_size=5).map(jsonl_bytes),
    broken_file(),
)  # fmt: skip


def read_whole(path: Path) -> list[ImportedMessage]:
    count_messages(path)  # `eva import` counts first, for its progress bar
    return list(read_any(path))


@FUZZ
@given(data=any_bytes)
@example(data=jsonl_bytes([RawLine(deep())]))
@example(data=b'{"guild": {}, "messages": ' + deep().encode() + b"}")
@example(data=jsonl_bytes([{**jsonl_record(0), "date": "0001-01-01T00:00:00+05:00"}]))
@example(data=dce_bytes([{**dce_message(0), "id": "99999999999999999999"}]))
@example(data=b"x" * (1 << 21))
def test_readers_raise_import_format_error_and_nothing_else(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "export.json"
    path.write_bytes(data)
    try:
        records = read_whole(path)
    except ImportFormatError as exc:
        message = str(exc)
        assert message.startswith("export.json") and "\n" not in message and SECRET not in message, message
        return
    for record in records:
        assert isinstance(record.content, str) and isinstance(record.author_name, str) and record.author_name
        assert record.created_at.utcoffset() is not None
        assert record.snowflake is None or 0 <= record.snowflake < 2**63
        assert record.author_id is None or 0 <= record.author_id < 2**63


# --- `eva import` writes nothing when the file fails -------------------------------------------


async def log_size(sessions: async_sessionmaker[AsyncSession]) -> tuple[int, int]:
    async with sessions() as s:
        return (
            int(await s.scalar(select(func.count()).select_from(Chat)) or 0),
            int(await s.scalar(select(func.count()).select_from(Message)) or 0),
        )


async def eva_import(database_url: str, path: Path, chat: str = "imported") -> None:
    settings_ = Settings(_env_file=None, database_url=database_url)  # type: ignore[call-arg]
    await cmd_import(argparse.Namespace(file=path, chat=chat), settings_)


@settings(FUZZ, max_examples=25)
@given(data=broken_file())
@example(data=jsonl_bytes([*(jsonl_record(k) for k in range(1500)), {**jsonl_record(1500), "text": 5}]))
@example(
    data=dce_bytes(
        [*(dce_message(k) for k in range(1200)), {**dce_message(1200), "id": "99999999999999999999"}]
    )
)
@example(
    data=jsonl_bytes(
        [*(jsonl_record(k) for k in range(1100)), {**jsonl_record(1100), "date": "0001-01-01T00:00:00+01:00"}]
    )
)
async def test_eva_import_of_a_broken_file_writes_nothing(
    tmp_path: Path, database_url: str, sessions: async_sessionmaker[AsyncSession], data: bytes
) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(data)
    before = await log_size(sessions)
    with pytest.raises(CliError) as refused:
        await eva_import(database_url, path)
    assert "\n" not in str(refused.value) and SECRET not in str(refused.value)
    assert await log_size(sessions) == before


async def test_eva_import_keeps_nul_and_lone_surrogates_as_replacement_characters(
    tmp_path: Path, database_url: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    path = tmp_path / "odd.jsonl"
    odd = [
        {**jsonl_record(0), "text": "nul\x00here"},
        {**jsonl_record(1), "text": "half an emoji \ud83d", "author": "x\udc80", "reply_to": []},
    ]
    path.write_text("\n".join(json.dumps(r) for r in odd) + "\n")  # JSON escapes: valid ASCII
    await eva_import(database_url, path, chat="odd")
    async with sessions() as s:
        rows = (await s.execute(select(Message.text, Message.author_name).order_by(Message.idx))).all()
    assert [tuple(r) for r in rows] == [("nul\ufffdhere", "nick0"), ("half an emoji \ufffd", "x\ufffd")]
