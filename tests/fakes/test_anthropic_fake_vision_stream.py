"""The fake Anthropic API's image blocks and server-sent events, through the real SDK.

Image rules checked (anthropic 2.14 types/base64_image_source_param.py and the API's 400s): four
media types, valid base64, the data of the declared type, 5 MB (5,242,880 bytes of base64) per
image, 100 images per request, and images only in user turns (not in the system prompt, not in
an assistant turn). Events: the order and payloads the API sends for text and tool calls.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anthropic
import pytest

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault

MODEL = "claude-sonnet-5-5"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
JPEG = b"\xff\xd8\xff\xe0" + bytes(24)
TOOL: Any = {
    "name": "recall",
    "description": "Search.",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
}


def image(data: bytes, media_type: str = "image/png", encoded: str | None = None) -> dict[str, Any]:
    payload = encoded if encoded is not None else base64.b64encode(data).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": payload}}


def asking(*blocks: dict[str, Any]) -> list[Any]:
    return [{"role": "user", "content": [*blocks, {"type": "text", "text": "what is this?"}]}]


async def test_image_blocks_are_accepted(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    messages = asking(
        image(PNG),
        image(JPEG, "image/jpeg"),
        {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
    )
    reply = await client.messages.create(model=MODEL, max_tokens=20, messages=messages)
    assert reply.stop_reason == "end_turn" and fake.log[-1].status == 200


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (image(PNG, "image/svg+xml"), "media_type: Input should be 'image/jpeg'"),
        (image(PNG, "image/jpeg"), "Image does not match the provided media type image/jpeg"),
        (image(b"plain text, not a picture"), "Could not process image"),
        (image(PNG, encoded="not base64!!"), "invalid base64 data"),
        (
            image(PNG, encoded="A" * (5 * 1024 * 1024 + 4)),
            "image exceeds 5 MB maximum: 5242884 bytes > 5242880 bytes",
        ),
        ({"type": "image", "source": {"type": "base64", "media_type": "image/png"}}, "data: Field required"),
        ({"type": "image", "source": {"type": "path", "path": "/tmp/x.png"}}, "Input tag should be"),
    ],
)
async def test_bad_image_blocks_are_refused(
    client: anthropic.AsyncAnthropic, block: dict[str, Any], message: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        await client.messages.create(model=MODEL, max_tokens=20, messages=asking(block))
    assert message in str(refused.value)


async def test_images_go_only_in_user_turns_and_at_most_100(client: anthropic.AsyncAnthropic) -> None:
    with pytest.raises(anthropic.BadRequestError, match=r"system\.0\.type: Input should be 'text'"):
        await client.messages.create(model=MODEL, max_tokens=20, system=[image(PNG)], messages=asking())  # type: ignore[list-item]
    in_assistant: Any = [*asking(), {"role": "assistant", "content": [image(PNG)]}]
    with pytest.raises(
        anthropic.BadRequestError, match="`image` blocks are not allowed in `assistant` messages"
    ):
        await client.messages.create(model=MODEL, max_tokens=20, messages=in_assistant)
    with pytest.raises(anthropic.BadRequestError, match="Too many images in the request: 101 > 100"):
        await client.messages.create(model=MODEL, max_tokens=20, messages=asking(*[image(PNG)] * 101))
    await client.messages.create(model=MODEL, max_tokens=20, messages=asking(*[image(PNG)] * 100))


async def raw_events(client: anthropic.AsyncAnthropic, **request: Any) -> list[dict[str, Any]]:
    """The events as sent (the SDK's raw stream, not its accumulated helper)."""
    stream = await client.messages.create(stream=True, **request)
    return [event.model_dump(exclude_none=True) async for event in stream]


async def test_streamed_text_comes_in_the_apis_event_order(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.stream_chunk_chars = 5
    fake.script.push_text("Hello there, you.")
    events = await raw_events(client, model=MODEL, max_tokens=50, messages=asking())
    kinds = [e["type"] for e in events]
    assert kinds == ["message_start", "content_block_start"] + ["content_block_delta"] * 4 + [
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]  # the SDK drops "ping" events from the raw stream
    start = events[0]["message"]
    assert start["content"] == [] and "stop_reason" not in start  # None until message_delta
    assert events[1]["content_block"] == {"type": "text", "text": ""} and events[1]["index"] == 0
    assert "".join(e["delta"]["text"] for e in events[2:6]) == "Hello there, you."
    assert {e["delta"]["type"] for e in events[2:6]} == {"text_delta"}
    assert events[-2]["delta"]["stop_reason"] == "end_turn" and events[-2]["usage"]["output_tokens"] == 5


async def test_a_streamed_tool_call_comes_as_input_json_deltas(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script.push_tool_use("recall", {"query": "the flamingo"}, text="Let me look.")
    events = await raw_events(client, model=MODEL, max_tokens=50, tools=[TOOL], messages=asking())
    starts = [e for e in events if e["type"] == "content_block_start"]
    assert [s["content_block"]["type"] for s in starts] == ["text", "tool_use"]
    call = starts[1]["content_block"]
    assert call["name"] == "recall" and call["input"] == {} and call["id"].startswith("toolu_")
    pieces = [e["delta"] for e in events if e["type"] == "content_block_delta" and e["index"] == 1]
    assert {p["type"] for p in pieces} == {"input_json_delta"}
    assert json.loads("".join(p["partial_json"] for p in pieces)) == {"query": "the flamingo"}
    assert next(e for e in events if e["type"] == "message_delta")["delta"]["stop_reason"] == "tool_use"


async def test_a_reply_cut_by_max_tokens_says_so_in_the_stream(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script.push_text("word " * 40)
    async with client.messages.stream(model=MODEL, max_tokens=5, messages=asking()) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "max_tokens" and final.content[0].type == "text"
    assert final.content[0].text == ("word " * 40)[:20]  # 5 tokens x 4 bytes


async def test_an_image_counts_as_at_most_1600_tokens_whatever_its_file_size(
    client: anthropic.AsyncAnthropic,
) -> None:
    big = PNG + bytes(400_000)  # 400 KB of base64-encoded data would be ~133k tokens as text
    counted = await client.messages.count_tokens(
        model=MODEL, messages=[{"role": "user", "content": [image(big)]}]
    )
    assert counted.input_tokens == 1600


async def test_a_stream_can_fail_after_its_200_with_an_error_event(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.faults.fail_next(1, Fault("stream_error", after_deltas=1))
    fake.script.push_text("This answer will not finish.")
    seen: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as failed:
        async with client.messages.stream(model=MODEL, max_tokens=50, messages=asking()) as stream:
            async for piece in stream.text_stream:
                seen.append(piece)
    assert seen == ["This answe"] and failed.value.status_code == 200  # 1 of 3 deltas of 28 characters
    assert failed.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    fake.faults.fail_next(1, Fault("stream_error"))
    with pytest.raises(anthropic.InternalServerError) as refused:  # not streamed: a 529 up front
        await client.messages.create(model=MODEL, max_tokens=50, messages=asking())
    assert refused.value.status_code == 529
