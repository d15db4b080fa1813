"""Reading a DiscordChatExporter JSON export (the format is described in memory/imports/readers.py):
parsed once with the stdlib ``json`` module, records made one at a time, system messages
skipped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memory.file_limits import DCE_EXPORT_BYTES, FileTooLarge, read_limited
from memory.imports.dce_names import channel_names, mentioned_people, role_names
from memory.imports.fields import (
    ExportRecords,
    ImportFormatError,
    MessageIds,
    check_size,
    optional_str,
    parse_snowflake,
    parse_time,
    require_str,
    type_name,
)
from memory.text.records import ExportOrigin, ImportedMessage

# DCE message types that are something a person (or an app acting for one) posted. Names for
# the types DCE knows, numbers (as strings) for those it writes as numbers: 0 default,
# 19 reply, 20 slash-command response, 21 thread starter, 23 context-menu command response.
_DCE_KEPT_TYPES = frozenset(
    {"Default", "Reply", "ChatInputCommand", "ContextMenuCommand", "ThreadStarterMessage"}
    | {"0", "19", "20", "21", "23"}
)
_DCE_REPLY_TYPES = frozenset({"Reply", "19"})


# What a DCE message calls the fields of a record, for "its 'content' differs".
_DCE_FIELDS = {
    "author_id": "'author.id'", "author_name": "author's name", "is_bot": "'author.isBot'",
    "created_at": "'timestamp'", "edited_at": "'timestampEdited'", "content": "'content'",
    "attachments": "attachments, stickers or embeds", "reply_to_source": "'reference'",
    "mentions": "'mentions'", "roles": "'mentions' roles",
}  # fmt: skip


def open_dce(file: Path) -> tuple[ExportOrigin, ExportRecords]:
    """The export's guild and channel, and its messages (a bad message fails when reached; a
    repeated id follows :class:`MessageIds`)."""
    messages, name, document = _load_dce_document(file)
    channels = channel_names(document)

    def earlier(position: int) -> tuple[str, ImportedMessage]:
        message = messages[position]
        return f"messages[{position}]", _dce_message(message, message.get("type", "Default"), "", channels)

    ids = MessageIds("id", _DCE_FIELDS, earlier)
    return _dce_origin(document, name), ExportRecords(_iter_dce(messages, name, channels, ids), ids)


def _dce_origin(document: dict[str, Any], name: str) -> ExportOrigin:
    ids: list[int | None] = []
    for key in ("guild", "channel"):
        part = document.get(key)
        raw = part.get("id") if isinstance(part, dict) else None
        if raw is None:
            ids.append(None)
            continue
        if not isinstance(raw, str):
            raise ImportFormatError(f"{name}: '{key}.id' must be a string, got {type_name(raw)}")
        if key == "guild" and raw == "0":  # how DCE writes a DM export's guild
            ids.append(None)
            continue
        ids.append(parse_snowflake(raw, f"{key}.id", name))
    guild, channel = ids
    return ExportOrigin(guild_id=guild, channel_id=channel)


def load_dce(file: Path) -> tuple[list[Any], str]:
    messages, name, _document = _load_dce_document(file)
    return messages, name


def _load_dce_document(file: Path) -> tuple[list[Any], str, dict[str, Any]]:
    name = file.name
    try:
        raw = read_limited(
            file, DCE_EXPORT_BYTES, "a DiscordChatExporter export",
            "export a shorter date range (DiscordChatExporter's --after and --before)",
        )  # fmt: skip
        text = raw.decode("utf-8-sig")
        del raw  # the text is what is parsed: the bytes need not stay in memory beside it
        document = json.loads(text)
    except FileTooLarge as exc:
        raise ImportFormatError(str(exc)) from None
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
        raise ImportFormatError(f"{name}: expected a JSON object, got {type_name(document)}")
    messages = document.get("messages")
    if not isinstance(messages, list):
        raise ImportFormatError(f"{name}: no 'messages' list (not a DiscordChatExporter JSON export)")
    return messages, name, document


def _iter_dce(
    messages: list[Any], name: str, channels: tuple[tuple[int, str], ...], ids: MessageIds
) -> Iterator[ImportedMessage]:
    for position, message in enumerate(messages):
        where = f"{name} messages[{position}]"
        if not isinstance(message, dict):
            raise ImportFormatError(f"{where}: expected a JSON object, got {type_name(message)}")
        kind = message.get("type", "Default")
        if not isinstance(kind, str):
            raise ImportFormatError(f"{where}: 'type' must be a string, got {type_name(kind)}")
        if kind not in _DCE_KEPT_TYPES:
            continue  # a system message: generated text, not something anyone said
        record = _dce_message(message, kind, where, channels)
        assert record.snowflake is not None  # a DCE message always has its id
        if ids.is_new(record.snowflake, position, record, where):
            yield record


def _dce_message(
    message: dict[str, Any], kind: str, where: str, channels: tuple[tuple[int, str], ...] = ()
) -> ImportedMessage:
    source_id = require_str(message, "id", where)
    snowflake = parse_snowflake(source_id, "id", where)
    author = message.get("author")
    if not isinstance(author, dict):
        raise ImportFormatError(f"{where}: 'author' must be an object, got {type_name(author)}")
    author_id = parse_snowflake(
        require_str(author, "id", f"{where} author"), "author.id", f"{where} (message {snowflake})"
    )
    display = author.get("nickname") or author.get("name")
    if not isinstance(display, str) or not display:
        raise ImportFormatError(f"{where}: the author has neither 'nickname' nor 'name'")
    is_bot = author.get("isBot", False)
    if not isinstance(is_bot, bool):
        raise ImportFormatError(f"{where}: 'author.isBot' must be true or false")
    created = parse_time(message.get("timestamp"), "timestamp", where, required=True)
    edited = parse_time(message.get("timestampEdited"), "timestampEdited", where, required=False)
    content = optional_str(message, "content", where)
    mentions, mentioned = mentioned_people(message)
    attachments = _dce_attachments(message, where)
    forwarded = message.get("forwardedMessage")
    if isinstance(forwarded, dict):
        # A forward (DCE 2.47+) shows the forwarded message's content in the channel.
        inner = optional_str(forwarded, "content", where)
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
    check_size(content, attachments, where)
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
            raise ImportFormatError(f"{where}: '{key}' must be a list, got {type_name(items)}")
        for item in items:
            value = item.get(field) if isinstance(item, dict) else None
            if isinstance(value, str) and value:
                names.append(f"{kind}:{value}")
            elif required:
                raise ImportFormatError(f"{where}: an item of '{key}' has no '{field}' string")
    return tuple(names)
