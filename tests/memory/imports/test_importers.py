"""Importers: the real IRC exports, the DCE reference sample, and broken files."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

from memory.imports.readers import (
    ImportedMessage,
    ImportFormatError,
    count_messages,
    detect_format,
    message_text,
    read_any,
    read_dce,
    read_jsonl,
)

SHARED = Path(__file__).resolve().parents[4] / "shared"
RUST_JSONL = SHARED / "data" / "irc" / "rust.jsonl"
RUST_DCE = SHARED / "data" / "irc" / "rust.dce.json"
DCE_SAMPLE = SHARED / "reference" / "dce-sample.json"
DISCORD_EPOCH_MS = 1420070400000

needs_data = pytest.mark.skipif(not RUST_JSONL.exists(), reason="the shared chat corpora are not present")


def _line(index: int, **fields: Any) -> str:
    record = {
        "i": index,
        "author": f"nick{index}",
        "text": f"message {index}",
        "date": "2020-01-01T10:00:00Z",
    }
    record.update(fields)
    return json.dumps(record) + "\n"


def _write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _dce_message(seq: int, **fields: Any) -> dict[str, Any]:
    when = datetime(2025, 3, 14, 18, 0, seq, tzinfo=UTC)
    snowflake = ((int(when.timestamp() * 1000) - DISCORD_EPOCH_MS) << 22) | seq
    message: dict[str, Any] = {
        "id": str(snowflake),
        "type": "Default",
        "timestamp": when.isoformat(),
        "timestampEdited": None,
        "content": f"text {seq}",
        "author": {"id": "156124779118727816", "name": "mira.k", "nickname": "Mira", "isBot": False},
        "attachments": [],
        "embeds": [],
        "stickers": [],
    }
    message.update(fields)
    return message


def _dce_file(path: Path, messages: list[dict[str, Any]]) -> Path:
    document = {
        "guild": {"id": "1"},
        "channel": {"id": "2"},
        "messages": messages,
        "messageCount": len(messages),
    }
    return _write(path, json.dumps(document, indent=2, ensure_ascii=False))


# ---------------------------------------------------------------------------------------------
# Real files


@needs_data
def test_rust_jsonl_reads_every_message_with_first_and_last_matching_the_file() -> None:
    messages = list(read_jsonl(RUST_JSONL))
    lines = RUST_JSONL.read_text(encoding="utf-8").splitlines()
    assert len(messages) == 3576 == len(lines)
    for message, raw in ((messages[0], lines[0]), (messages[-1], lines[-1])):
        record = json.loads(raw)
        assert message.author_name == record["author"]
        assert message.content == record["text"]
        assert message.source_id == str(record["i"])
        assert message.created_at == datetime.fromisoformat(record["date"])
        assert message.created_at.tzinfo is UTC
        assert message.author_id is None and message.snowflake is None
    assert messages[-1].reply_to_source == "3565"
    assert detect_format(RUST_JSONL) == "jsonl"
    assert count_messages(RUST_JSONL) == 3576


@needs_data
def test_rust_dce_matches_the_jsonl_it_was_made_from() -> None:
    dce = list(read_dce(RUST_DCE))
    plain = list(read_jsonl(RUST_JSONL))
    assert len(dce) == 3576
    assert detect_format(RUST_DCE) == "dce"
    assert count_messages(RUST_DCE) == 3576
    index_of = {message.source_id: k for k, message in enumerate(dce)}
    for k, (ours, theirs) in enumerate(zip(dce, plain, strict=True)):
        assert ours.author_name == theirs.author_name, k
        assert ours.content == theirs.content, k
        assert ours.created_at == theirs.created_at, k
        assert ours.author_id is not None and ours.snowflake == int(ours.source_id or "x")
        replied = None if ours.reply_to_source is None else index_of[ours.reply_to_source]
        expected = None if theirs.reply_to_source is None else int(theirs.reply_to_source)
        assert replied == expected, k  # DCE keeps the last reply_to, as the JSONL reader does
    first = dce[0]
    assert first.snowflake is not None
    assert (first.snowflake >> 22) + DISCORD_EPOCH_MS == int(first.created_at.timestamp() * 1000)
    assert first.author_id == 135331856777351581
    assert dce[-1].source_id == "530993094066314743"


@needs_data
def test_read_any_dispatches_on_the_content() -> None:
    assert next(read_any(RUST_DCE)).snowflake is not None
    assert next(read_any(RUST_JSONL)).snowflake is None


def test_dce_reference_sample_skips_system_messages_and_keeps_discord_fields() -> None:
    messages = list(read_dce(DCE_SAMPLE))
    assert len(messages) == 6  # the GuildMemberJoin is generated text, not something anyone said
    welcome, thanks, map_message, remember, bot_reply, catan = messages
    assert welcome.author_name == "mira ☕"  # nickname over username
    assert welcome.author_id == 156124779118727816
    assert thanks.reply_to_source == welcome.source_id
    assert map_message.attachments == ("file:map.png",)
    assert remember.edited_at == datetime(2025, 3, 14, 18, 6, 31, tzinfo=UTC)
    assert bot_reply.is_bot and not remember.is_bot
    assert bot_reply.reply_to_source == remember.source_id
    assert catan.content == "i'll bring the big catan box :meeple:"


def test_dce_stickers_embeds_offsets_forwards_and_types(tmp_path: Path) -> None:
    path = _dce_file(
        tmp_path / "chat.json",
        [
            _dce_message(
                1,
                content="look",
                stickers=[{"id": "9", "name": "wave"}],
                embeds=[{"title": "Rust Playground"}, {"title": None, "url": "https://x"}],
                timestamp="2025-03-14T20:00:01.5+02:00",
            ),
            _dce_message(2, type="ChannelPinnedMessage", content="Pinned a message."),
            _dce_message(3, type="20", content="slash answer"),
            _dce_message(4, type="24", content="AutoMod blocked a message"),
            _dce_message(
                5,
                content="",
                reference={"type": "Forward", "messageId": "123"},
                forwardedMessage={"content": "the plan", "attachments": [{"fileName": "plan.pdf"}]},
            ),
            _dce_message(6, author={"id": "42", "name": "olduser", "isBot": True}),
        ],
    )
    look, slash, forward, legacy = read_dce(path)
    assert look.attachments == ("sticker:wave", "embed:Rust Playground")
    assert look.created_at == datetime(2025, 3, 14, 18, 0, 1, 500000, tzinfo=UTC)
    assert slash.content == "slash answer"
    assert forward.content == "[forwarded] the plan"
    assert forward.attachments == ("file:plan.pdf",)
    assert forward.reply_to_source is None  # a forward is not a reply
    assert (legacy.author_name, legacy.author_id, legacy.is_bot) == ("olduser", 42, True)
    assert count_messages(path) == 6  # messageCount counts the skipped ones too: an upper bound


def test_jsonl_reply_to_keeps_the_last_index_and_flags_known_bots(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "chat.jsonl",
        _line(0) + _line(1, reply_to=[]) + _line(2, author="ubottu", reply_to=[0, 1], extra={"x": 1}),
    )
    first, second, third = read_jsonl(path)
    assert first.reply_to_source is None and second.reply_to_source is None
    assert third.reply_to_source == "1"
    assert third.is_bot and not first.is_bot


def test_jsonl_with_byte_order_mark_and_blank_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "bom.jsonl", b"\xef\xbb\xbf" + _line(0).encode() + b"\n" + _line(1).encode())
    assert detect_format(path) == "jsonl"
    assert [m.source_id for m in read_jsonl(path)] == ["0", "1"]
    assert count_messages(path) == 2


def test_one_line_files_of_either_format(tmp_path: Path) -> None:
    jsonl = _write(tmp_path / "one.jsonl", _line(0).rstrip("\n"))  # no final newline
    assert detect_format(jsonl) == "jsonl"
    assert [m.content for m in read_any(jsonl)] == ["message 0"]
    compact = _write(tmp_path / "compact.json", json.dumps({"channel": {}, "messages": [_dce_message(1)]}))
    assert detect_format(compact) == "dce"
    assert [m.content for m in read_any(compact)] == ["text 1"]
    assert count_messages(compact) == 1  # no messageCount: falls back to len(messages)


def test_jsonl_is_read_lazily_up_to_the_bad_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "lazy.jsonl", _line(0) + _line(1) + "{not json\n")
    assert [m.source_id for m in islice(read_jsonl(path), 2)] == ["0", "1"]


def test_message_text_format() -> None:
    attachments = ("file:a.png", "sticker:wave", "embed:Title", "b.txt")
    assert (
        message_text("hi", attachments, 12)
        == "hi [file: a.png] [sticker: wave] [embed: Title] [file: b.txt] (reply to #12)"
    )
    assert message_text("", ("file:map.png",)) == "[file: map.png]"
    assert message_text("line one\nline two") == "line one\nline two"
    assert message_text("", (), 0) == "(reply to #0)"


def test_message_text_of_an_imported_message() -> None:
    message = ImportedMessage(
        author_id=1,
        author_name="Jonas",
        is_bot=False,
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        edited_at=None,
        content="same place",
        attachments=("file:map.png",),
        reply_to_source="99",
        source_id="100",
        snowflake=100,
    )
    assert message_text(message.content, message.attachments, 3) == "same place [file: map.png] (reply to #3)"


# ---------------------------------------------------------------------------------------------
# Broken files


@pytest.mark.parametrize("reader", [read_jsonl, read_dce, read_any, detect_format, count_messages])
def test_missing_file(tmp_path: Path, reader: Any) -> None:
    with pytest.raises(ImportFormatError, match=r"^nothing\.jsonl: cannot read"):
        reader(tmp_path / "nothing.jsonl")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (_line(0) + _line(1) + '{"i": 2, "author": "x",\n', r"^bad\.jsonl line 3: not valid JSON"),
        (_line(0) + _line(1, text=5), r"^bad\.jsonl line 2: 'text' must be a string, got a number"),
        (_line(0) + '{"i": 1, "text": "x", "date": "2020-01-01T00:00:00Z"}\n', r"line 2: missing 'author'"),
        (_line(0) + "[1, 2]\n", r"line 2: expected a JSON object, got a list"),
        (_line(0) + _line(1, date="yesterday"), r"line 2: 'date' is not an ISO 8601 time"),
        (_line(0) + _line(1, date="2020-01-01T10:00:00"), r"line 2: 'date' has no UTC offset"),
        (_line(0) + _line(1, reply_to=["0"]), r"line 2: 'reply_to' must be a list of integers"),
        (_line(0) + _line(1, i="1"), r"line 2: 'i' must be an integer"),
        (_line(0) + _line(1) + _line(2)[:30], r"^bad\.jsonl line 3: truncated"),
        ("\n\n", r"^bad\.jsonl: empty file"),
        (_line(0).encode() + b'{"i": 1, "author": "\xff\xfe"}\n', r"^bad\.jsonl line 2: not valid UTF-8"),
    ],
)
def test_bad_jsonl(tmp_path: Path, content: str | bytes, expected: str) -> None:
    path = _write(tmp_path / "bad.jsonl", content)
    with pytest.raises(ImportFormatError, match=expected):
        list(read_jsonl(path))


@pytest.mark.parametrize(
    ("name", "content", "reader", "expected"),
    [
        ("notes.txt", "hello\n", detect_format, r"^notes\.txt line 1: not a JSON object"),
        (
            "package.json",
            '{"name": "x", "version": "1"}\n',
            detect_format,
            r"^package\.json: not a chat export: expected a JSONL chat log .* or DiscordChatExporter's JSON",
        ),
        (
            "chat.json",
            '{\n  "guild": {},\n  "messages": [1 2]\n}\n',
            read_dce,
            r"^chat\.json line 3: not valid JSON",
        ),
        ("chat.json", b'{\n  "messages": ["\xff"]\n}\n', read_dce, r"^chat\.json: not valid UTF-8"),
    ],
    ids=["not-an-export", "other-json", "dce-syntax-error-names-the-line", "dce-bad-utf8"],
)
def test_a_broken_file_is_named_in_the_error(
    tmp_path: Path, name: str, content: str | bytes, reader: Any, expected: str
) -> None:
    path = _write(tmp_path / name, content)
    with pytest.raises(ImportFormatError, match=expected):
        reader(path)


def test_empty_file_fails_at_once(tmp_path: Path) -> None:
    path = _write(tmp_path / "empty.jsonl", b"")
    with pytest.raises(ImportFormatError, match=r"^empty\.jsonl: empty file"):
        read_jsonl(path)
    with pytest.raises(ImportFormatError, match="empty file"):
        detect_format(path)


def test_dce_without_messages(tmp_path: Path) -> None:
    path = _write(tmp_path / "chat.json", json.dumps({"guild": {}, "channel": {}}, indent=2))
    assert detect_format(path) == "dce"
    with pytest.raises(ImportFormatError, match=r"^chat\.json: no 'messages' list"):
        read_dce(path)


def test_dce_truncated_names_the_line(tmp_path: Path) -> None:
    full = _dce_file(tmp_path / "full.json", [_dce_message(1), _dce_message(2)]).read_text()
    path = _write(tmp_path / "cut.json", full[: len(full) // 2])
    with pytest.raises(ImportFormatError, match=r"^cut\.json line \d+: truncated"):
        read_dce(path)


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"timestamp": "soon"}, r"messages\[1\]: 'timestamp' is not an ISO 8601 time"),
        ({"author": "mira"}, r"messages\[1\]: 'author' must be an object"),
        ({"id": "12ab"}, r"messages\[1\]: 'id' is not a Discord id"),
        ({"attachments": [{"url": "x"}]}, r"messages\[1\]: an item of 'attachments' has no 'fileName'"),
        ({"content": 7}, r"messages\[1\]: 'content' must be a string"),
    ],
)
def test_bad_dce_message_names_its_position(tmp_path: Path, bad: dict[str, Any], expected: str) -> None:
    path = _dce_file(tmp_path / "chat.json", [_dce_message(0), _dce_message(1, **bad)])
    reader = read_dce(path)
    assert next(reader).content == "text 0"
    with pytest.raises(ImportFormatError, match=r"^chat\.json " + expected):
        next(reader)
