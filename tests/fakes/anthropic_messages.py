"""The fake's response bodies: a complete message, and the same message as server-sent events."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from memory.fakes.prompt_cache import BYTES_PER_TOKEN, estimate_tokens
from tests.fakes.anthropic_behaviours import ScriptedReply

STREAM_CHUNKS = 3  # deltas per streamed block: enough to exercise the SDK's accumulation


def _cut_utf8(text: str, limit: int) -> str:
    return text.encode("utf-8")[: max(0, limit)].decode("utf-8", errors="ignore")


def build_message(
    body: Mapping[str, Any], outcome: ScriptedReply, message_id: str, new_tool_id: Callable[[], str]
) -> dict[str, Any]:
    """The message (without usage), with stop sequences and ``max_tokens`` applied to text.

    ``max_tokens`` is taken as ``max_tokens x BYTES_PER_TOKEN`` bytes of text; a reply cut there
    has ``stop_reason`` "max_tokens". A scripted ``stop_reason`` is kept as given.
    """
    stop_reason, stop_sequence = outcome.stop_reason, None
    budget = body["max_tokens"] * BYTES_PER_TOKEN
    content: list[dict[str, Any]] = []
    for raw in outcome.content:
        block = dict(raw)
        if block["type"] == "tool_use":
            block.setdefault("id", new_tool_id())
            block.setdefault("input", {})
        elif block["type"] == "text":
            text = block["text"]
            hits = [(text.find(seq), seq) for seq in body.get("stop_sequences") or () if seq in text]
            if hits:
                position, stop_sequence = min(hits)
                text, stop_reason = text[:position], "stop_sequence"
            elif len(text.encode("utf-8")) > budget:
                text, stop_reason = _cut_utf8(text, budget), "max_tokens"
            budget -= len(text.encode("utf-8"))
            block["text"] = text
        if block["type"] != "text" or block["text"]:
            content.append(block)
        if stop_reason in ("stop_sequence", "max_tokens"):
            break
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
    }


def output_tokens(content: list[dict[str, Any]]) -> int:
    """Estimated like input (bytes / 4): text by its text, a tool call by its name and JSON input."""
    total = 0
    for block in content:
        if block["type"] == "text":
            total += estimate_tokens(block["text"])
        else:
            total += estimate_tokens(block.get("name", "") + json.dumps(block.get("input", {})))
    return max(1, total)


def _chunks(text: str, count: int = STREAM_CHUNKS, size: int | None = None) -> list[str]:
    """``count`` pieces, or pieces of ``size`` characters (the real API sends a few tokens per
    delta, so a long reply comes in hundreds of deltas)."""
    size = size or max(1, -(-len(text) // count))
    return [text[start : start + size] for start in range(0, len(text), size)] or [""]


STREAM_ERROR = {"type": "overloaded_error", "message": "Overloaded"}


async def write_sse(
    request: web.Request,
    message: dict[str, Any],
    request_id: str,
    chunk_chars: int | None = None,
    error_after: int | None = None,
) -> web.StreamResponse:
    """The message as server-sent events, with the API's event names and order:
    message_start, ping, per block content_block_start / _delta... / _stop, message_delta, message_stop.
    ``chunk_chars`` sets the characters per text delta (default: three deltas per block).
    ``error_after``: after that many deltas an ``error`` event ends the stream, as the API does
    when it fails after the 200 (an overload mid-answer).
    """
    headers = {"request-id": request_id, "content-type": "text/event-stream", "cache-control": "no-cache"}
    response = web.StreamResponse(status=200, headers=headers)
    await response.prepare(request)

    async def send(event: str, data: dict[str, Any]) -> None:
        await response.write(f"event: {event}\ndata: {json.dumps({'type': event, **data})}\n\n".encode())

    usage = message["usage"]
    opening = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    opening["usage"] = {**usage, "output_tokens": 1}
    await send("message_start", {"message": opening})
    await send("ping", {})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            pieces = _chunks(block["text"], size=chunk_chars)
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
        else:
            start = {**block, "input": {}}
            pieces = _chunks(json.dumps(block["input"]))
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        await send("content_block_start", {"index": index, "content_block": start})
        for delta in deltas:
            if error_after is not None and error_after <= 0:
                await send("error", {"error": STREAM_ERROR})
                await response.write_eof()
                return response
            await send("content_block_delta", {"index": index, "delta": delta})
            error_after = None if error_after is None else error_after - 1
        await send("content_block_stop", {"index": index})
    counters = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    final = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    await send("message_delta", {"delta": final, "usage": {key: usage[key] for key in counters}})
    await send("message_stop", {})
    await response.write_eof()
    return response
