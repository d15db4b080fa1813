"""Request-shape checks of the fake Messages API, with the real API's 400 messages where known.

Messages quoted from real API errors (GitHub issues citing them): the tool_result/tool_use pairing
messages, "A maximum of 4 blocks with cache_control may be provided. Found N.", the non-empty
content rule, and pydantic-style "field: Field required". The others are close paraphrases.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

MAX_CACHE_MARKS = 4

# Top-level fields of MessageCreateParams in anthropic 2.14 (types/message_create_params.py);
# an unknown one is a 400 "Extra inputs are not permitted", as in the API.
_CREATE_FIELDS = frozenset(
    {
        "model", "max_tokens", "messages", "cache_control", "container", "diagnostics",
        "inference_geo", "metadata", "output_config", "service_tier", "speed", "stop_sequences",
        "system", "thinking", "tool_choice", "tools", "user_profile_id", "workspace_id", "stream",
        "temperature", "top_k", "top_p", "context_management", "mcp_servers",
    }
)  # fmt: skip
_COUNT_FIELDS = _CREATE_FIELDS - {"max_tokens", "stream", "stop_sequences", "metadata", "service_tier"}
_USER_BLOCKS = frozenset({"text", "image", "document", "search_result", "tool_result", "container_upload"})
_ASSISTANT_BLOCKS = frozenset(
    {"text", "thinking", "redacted_thinking", "tool_use", "server_tool_use", "web_search_tool_result"}
)
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")

# Images (anthropic 2.14 types/base64_image_source_param.py; the vision docs): base64, url or
# file sources; four media types; at most 5 MB per image, counted on the base64 text as the API
# does ("image exceeds 5 MB maximum: N bytes > 5242880 bytes", quoted from real 400s); at most
# 100 images per request; the data must be the declared type ("Image does not match the
# provided media type image/png", quoted from real 400s).
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
MAX_IMAGES = 100


class InvalidRequest(Exception):
    """A request the API would refuse; becomes the API's error body."""

    def __init__(self, message: str, status: int = 400, error_type: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type


def _text_blocks_ok(where: str, blocks: list[Any], marks: list[tuple[str, str]]) -> None:
    for j, block in enumerate(blocks):
        if not isinstance(block, Mapping) or block.get("type") != "text":
            raise InvalidRequest(f"{where}.{j}.type: Input should be 'text'")
        if not isinstance(block.get("text"), str) or not block["text"]:
            raise InvalidRequest(f"{where}: text content blocks must be non-empty")
        _collect_mark(f"{where}.{j}", block, marks)


def _collect_mark(where: str, block: Mapping[str, Any], marks: list[tuple[str, str]]) -> None:
    mark = block.get("cache_control")
    if mark is None:
        return
    if not isinstance(mark, Mapping) or mark.get("type") != "ephemeral":
        raise InvalidRequest(f"{where}.cache_control.type: Input should be 'ephemeral'")
    ttl = mark.get("ttl", "5m")
    if ttl not in ("5m", "1h"):
        raise InvalidRequest(f"{where}.cache_control.ttl: Input should be '5m' or '1h'")
    marks.append((where, str(ttl)))


def _check_tools(tools: Any, marks: list[tuple[str, str]]) -> set[str]:
    if not isinstance(tools, list):
        raise InvalidRequest("tools: Input should be a valid list")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise InvalidRequest(f"tools.{i}: Input should be a valid dictionary")
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise InvalidRequest(f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        if tool.get("type", "custom") == "custom" and not isinstance(tool.get("input_schema"), Mapping):
            raise InvalidRequest(f"tools.{i}.custom.input_schema: Field required")
        if name in names:
            raise InvalidRequest("tools: Tool names must be unique.")
        names.add(name)
        _collect_mark(f"tools.{i}", tool, marks)
    return names


def _check_message(i: int, message: Any, is_last: bool, marks: list[tuple[str, str]]) -> None:
    if not isinstance(message, Mapping):
        raise InvalidRequest(f"messages.{i}: Input should be a valid dictionary")
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise InvalidRequest(f"messages.{i}.role: Input should be 'user' or 'assistant'")
    if "content" not in message:
        raise InvalidRequest(f"messages.{i}.content: Field required")
    content = message["content"]
    empty_ok = is_last and role == "assistant"
    if isinstance(content, str):
        if not content and not empty_ok:
            raise InvalidRequest(
                f"messages.{i}: all messages must have non-empty content except for the optional "
                "final assistant message"
            )
        return
    if not isinstance(content, list):
        raise InvalidRequest(f"messages.{i}.content: Input should be a valid string or list")
    if not content and not empty_ok:
        raise InvalidRequest(
            f"messages.{i}: all messages must have non-empty content except for the optional "
            "final assistant message"
        )
    allowed = _USER_BLOCKS if role == "user" else _ASSISTANT_BLOCKS
    for j, block in enumerate(content):
        where = f"messages.{i}.content.{j}"
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise InvalidRequest(f"{where}: Input should be a valid dictionary with a 'type'")
        kind = block["type"]
        if kind not in allowed:
            raise InvalidRequest(f"{where}: `{kind}` blocks are not allowed in `{role}` messages")
        if kind == "text" and (not isinstance(block.get("text"), str) or not block["text"]):
            raise InvalidRequest("messages: text content blocks must be non-empty")
        if kind == "tool_use" and not (
            isinstance(block.get("id"), str) and isinstance(block.get("name"), str)
        ):
            raise InvalidRequest(f"{where}: tool_use blocks need an `id` and a `name`")
        if kind == "tool_result" and not isinstance(block.get("tool_use_id"), str):
            raise InvalidRequest(f"{where}.tool_use_id: Field required")
        if kind == "image":
            _check_image(where, block)
        _collect_mark(where, block, marks)


def _sniff(data: bytes) -> str | None:
    """The image format from its signature bytes, as the API's decoder sees it."""
    signatures = (
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"GIF87a", "image/gif"),
        (b"GIF89a", "image/gif"),
    )
    for signature, media_type in signatures:
        if data.startswith(signature):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _check_image(where: str, block: Mapping[str, Any]) -> None:
    source = block.get("source")
    if not isinstance(source, Mapping) or source.get("type") not in ("base64", "url", "file"):
        raise InvalidRequest(f"{where}.image.source: Input tag should be 'base64', 'url' or 'file'")
    if source["type"] == "url":
        if not isinstance(source.get("url"), str):
            raise InvalidRequest(f"{where}.image.source.url.url: Field required")
        return
    if source["type"] == "file":
        if not isinstance(source.get("file_id"), str):
            raise InvalidRequest(f"{where}.image.source.file.file_id: Field required")
        return
    media_type = source.get("media_type")
    if media_type not in IMAGE_MEDIA_TYPES:
        raise InvalidRequest(
            f"{where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', "
            "'image/gif' or 'image/webp'"
        )
    data = source.get("data")
    if not isinstance(data, str):
        raise InvalidRequest(f"{where}.image.source.base64.data: Field required")
    if len(data) > MAX_IMAGE_BASE64_BYTES:
        raise InvalidRequest(
            f"{where}.image.source.base64: image exceeds 5 MB maximum: {len(data)} bytes > "
            f"{MAX_IMAGE_BASE64_BYTES} bytes"
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest(f"{where}.image.source.base64.data: invalid base64 data") from None
    actual = _sniff(raw)
    if actual is None:
        raise InvalidRequest(f"{where}.image.source.base64.data: Could not process image")
    if actual != media_type:
        raise InvalidRequest(
            f"{where}.image.source.base64.data: Image does not match the provided media type {media_type}"
        )


def _count_images(messages: list[Any]) -> int:
    count = 0
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, Mapping) and block.get("type") == "image":
                count += 1
            elif isinstance(block, Mapping) and block.get("type") == "tool_result":
                inner = block.get("content")
                count += sum(
                    1
                    for b in (inner if isinstance(inner, list) else [])
                    if isinstance(b, Mapping) and b.get("type") == "image"
                )
    return count


def _blocks(message: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, Mapping) and block.get("type") == kind]


def _check_tool_pairing(messages: list[Mapping[str, Any]]) -> None:
    for i, message in enumerate(messages):
        if message["role"] == "user":
            previous = messages[i - 1] if i > 0 and messages[i - 1]["role"] == "assistant" else None
            known = {block["id"] for block in _blocks(previous, "tool_use")} if previous else set()
            content = message.get("content")
            for j, block in enumerate(content if isinstance(content, list) else []):
                if block.get("type") == "tool_result" and block["tool_use_id"] not in known:
                    raise InvalidRequest(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                        f"blocks: {block['tool_use_id']}. Each `tool_result` block must have a "
                        "corresponding `tool_use` block in the previous message."
                    )
        elif i + 1 < len(messages):
            wanted = [block["id"] for block in _blocks(message, "tool_use")]
            answered = {block["tool_use_id"] for block in _blocks(messages[i + 1], "tool_result")}
            missing = [tool_id for tool_id in wanted if tool_id not in answered]
            if missing:
                raise InvalidRequest(
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                    "`tool_result` block in the next message."
                )


def _check_marks(marks: list[tuple[str, str]]) -> None:
    if len(marks) > MAX_CACHE_MARKS:
        raise InvalidRequest(
            f"A maximum of {MAX_CACHE_MARKS} blocks with cache_control may be provided. Found {len(marks)}."
        )
    seen_short = False
    for where, ttl in marks:
        if ttl == "5m":
            seen_short = True
        elif seen_short:
            raise InvalidRequest(
                f"{where}.cache_control: a ttl='1h' cache_control block must not come after a "
                "ttl='5m' cache_control block (longer TTLs first, in prefix order)"
            )


def validate_request(body: Any, *, count_tokens: bool = False) -> dict[str, Any]:
    """Check a Messages (or count_tokens) request body; raise InvalidRequest as the API would."""
    if not isinstance(body, dict):
        raise InvalidRequest("Request body must be a JSON object")
    allowed = _COUNT_FIELDS if count_tokens else _CREATE_FIELDS
    for key in body:
        if key not in allowed:
            raise InvalidRequest(f"{key}: Extra inputs are not permitted")
    required = ("model", "messages") if count_tokens else ("model", "max_tokens", "messages")
    for key in required:
        if key not in body:
            raise InvalidRequest(f"{key}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise InvalidRequest("model: Input should be a valid string")
    if not count_tokens:
        max_tokens = body["max_tokens"]
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
            raise InvalidRequest("max_tokens: Input should be a valid integer")
        if max_tokens < 1:
            raise InvalidRequest("max_tokens: Input should be greater than or equal to 1")
        if "stream" in body and not isinstance(body["stream"], bool):
            raise InvalidRequest("stream: Input should be a valid boolean")
    marks: list[tuple[str, str]] = []
    if "tools" in body:
        _check_tools(body["tools"], marks)
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        if not isinstance(system, list):
            raise InvalidRequest("system: Input should be a valid string or list of text blocks")
        _text_blocks_ok("system", system, marks)
    messages = body["messages"]
    if not isinstance(messages, list):
        raise InvalidRequest("messages: Input should be a valid list")
    if not messages:
        raise InvalidRequest("messages: at least one message is required")
    for i, message in enumerate(messages):
        _check_message(i, message, i == len(messages) - 1, marks)
    if messages[0]["role"] != "user":
        raise InvalidRequest('messages: first message must use the "user" role')
    images = _count_images(messages)
    if images > MAX_IMAGES:
        raise InvalidRequest(f"messages: Too many images in the request: {images} > {MAX_IMAGES}")
    _check_tool_pairing(messages)
    top = body.get("cache_control")
    if top is not None:
        _collect_mark("cache_control", {"cache_control": top}, marks)
    _check_marks(marks)
    stops = body.get("stop_sequences")
    if stops is not None and not (isinstance(stops, list) and all(isinstance(s, str) for s in stops)):
        raise InvalidRequest("stop_sequences: Input should be a valid list of strings")
    return body
