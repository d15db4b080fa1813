"""The fake Anthropic API through the real SDK: every response kind, validation, errors, control.

Cache rules: test_anthropic_fake_cache.py; the deterministic compactor: test_anthropic_fake_compactor.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import pytest
from anthropic.types import TextBlock, ToolUseBlock

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault, ToolCall

MODEL = "claude-haiku-5-5"
REPO_ROOT = Path(__file__).resolve().parents[2]
SEARCH_TOOL: Any = {
    "name": "search_memory",
    "description": "Search the chat memory.",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}


def user(text: str) -> Any:
    return {"role": "user", "content": text}


async def test_text_reply_is_a_complete_message(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script.push_text("Hello from the script.")
    message = await client.messages.create(model=MODEL, max_tokens=50, messages=[user("hi")])
    assert message.id.startswith("msg_") and message.type == "message" and message.role == "assistant"
    assert message.model == MODEL
    assert isinstance(message.content[0], TextBlock) and message.content[0].text == "Hello from the script."
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)
    assert message.usage.output_tokens == 6  # 22 bytes / 4, rounded up
    assert message.usage.cache_creation is not None and message.usage.cache_read_input_tokens == 0
    entry = fake.log[-1]
    assert entry.status == 200 and entry.kind == "reply" and entry.body["messages"] == [user("hi")]
    assert entry.headers["authorization"] == "Bearer <redacted>"  # the SDK 2.x sends a Bearer token
    assert entry.usage == message.usage.model_dump(exclude_none=True)


async def test_tool_use_then_tool_result_round_trip(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script.push_tool_use("search_memory", {"query": "Oslo trip"}, text="Let me look.")
    first = await client.messages.create(
        model=MODEL, max_tokens=50, tools=[SEARCH_TOOL], messages=[user("q")]
    )
    assert first.stop_reason == "tool_use"
    call = first.content[1]
    assert (
        isinstance(call, ToolUseBlock)
        and call.name == "search_memory"
        and call.input == {"query": "Oslo trip"}
    )
    history: list[Any] = [
        user("q"),
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "3 hits"}]},
    ]
    second = await client.messages.create(model=MODEL, max_tokens=50, tools=[SEARCH_TOOL], messages=history)
    assert second.stop_reason == "end_turn"
    assert second.content[0].type == "text" and "after 1 tool result" in second.content[0].text


async def test_replier_calls_planned_tools_first(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.replier.tool_plan = [ToolCall("search_memory", {"query": "tickets"})]
    first = await client.messages.create(
        model=MODEL, max_tokens=50, tools=[SEARCH_TOOL], messages=[user("q")]
    )
    assert [block.type for block in first.content] == ["tool_use"]
    without_tools = await client.messages.create(model=MODEL, max_tokens=50, messages=[user("q")])
    assert without_tools.stop_reason == "end_turn"  # a tool the request does not offer is never called


async def test_streaming_text(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    fake.script.push_text("Streaming works, piece by piece.")
    async with client.messages.stream(model=MODEL, max_tokens=50, messages=[user("hi")]) as stream:
        pieces = [piece async for piece in stream.text_stream]
        final = await stream.get_final_message()
    assert len(pieces) > 1 and "".join(pieces) == "Streaming works, piece by piece."
    assert final.content[0].type == "text" and final.content[0].text == "Streaming works, piece by piece."
    assert final.stop_reason == "end_turn" and final.usage.output_tokens == 8
    assert fake.log[-1].body["stream"] is True


async def test_streaming_tool_use(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    fake.script.push_tool_use("search_memory", {"query": "the Blue Bar", "limit": 3})
    kwargs: Any = {"model": MODEL, "max_tokens": 50, "tools": [SEARCH_TOOL], "messages": [user("q")]}
    async with client.messages.stream(**kwargs) as stream:
        events = [event.type async for event in stream]
        final = await stream.get_final_message()
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert "input_json" in events and "content_block_stop" in events
    call = final.content[0]
    assert isinstance(call, ToolUseBlock) and call.input == {"query": "the Blue Bar", "limit": 3}
    assert final.stop_reason == "tool_use"


async def test_count_tokens_matches_total_input(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    messages: Any = [user("x" * 400)]
    counted = await client.messages.count_tokens(model=MODEL, system="s" * 40, messages=messages)
    assert counted.input_tokens == 110  # 40/4 + 400/4
    reply = await client.messages.create(model=MODEL, max_tokens=10, system="s" * 40, messages=messages)
    usage = reply.usage
    assert (
        usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
        == 110
    )


async def test_stop_sequence_and_max_tokens(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    fake.script.push_text("one two STOP three")
    stopped = await client.messages.create(
        model=MODEL, max_tokens=50, stop_sequences=["STOP"], messages=[user("q")]
    )
    assert stopped.content[0].type == "text" and stopped.content[0].text == "one two "
    assert (stopped.stop_reason, stopped.stop_sequence) == ("stop_sequence", "STOP")
    fake.script.push_text("a long answer that will not fit")
    cut = await client.messages.create(model=MODEL, max_tokens=2, messages=[user("q")])
    assert (
        cut.stop_reason == "max_tokens"
        and cut.content[0].type == "text"
        and cut.content[0].text == "a long a"
    )


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([], "messages: at least one message is required"),
        ([{"role": "system", "content": "x"}], "messages.0.role: Input should be 'user' or 'assistant'"),
        ([{"role": "assistant", "content": "x"}], 'first message must use the "user" role'),
        ([user("")], "messages.0: all messages must have non-empty content"),
        ([user("a"), {"role": "assistant", "content": []}, user("b")], "messages.1: all messages must have"),
        (
            [user("a"), {"role": "assistant", "content": "b"},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x"}]}],
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x",
        ),
        (
            [user("a"), {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t",
                                                           "input": {}}]}, user("b")],
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1",
        ),
    ],
)  # fmt: skip
async def test_malformed_requests_are_400_with_the_api_body(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, messages: Any, expected: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await client.messages.create(model=MODEL, max_tokens=10, messages=messages)
    error = caught.value
    assert error.status_code == 400 and expected in error.message
    assert isinstance(error.body, dict) and error.body["error"]["type"] == "invalid_request_error"
    assert error.request_id == fake.log[-1].request_id and error.body["request_id"] == error.request_id
    assert len(fake.cache) == 0 and fake.log[-1].usage is None  # nothing cached or billed


async def test_raw_http_missing_fields_and_auth(fake: FakeAnthropic) -> None:
    url = f"{fake.base_url}/v1/messages"
    body = {"model": MODEL, "messages": [user("hi")]}
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=body, headers={"x-api-key": "k"}) as response:
            assert response.status == 400
            assert (await response.json())["error"]["message"] == "max_tokens: Field required"
            assert response.headers["request-id"].startswith("req_")
        async with session.post(url, json={**body, "max_tokens": 5}) as response:
            assert response.status == 401
            assert (await response.json())["error"]["type"] == "authentication_error"
        async with session.post(url, json={**body, "max_tokens": 5}, headers={"x-api-key": "k"}) as response:
            assert response.status == 200 and (await response.json())["type"] == "message"


async def test_rate_limit_is_retried_after_retry_after_ms(fake: FakeAnthropic) -> None:
    fake.faults.fail_next(1, Fault("rate_limit", retry_after=0.02))
    async with anthropic.AsyncAnthropic(api_key="test", base_url=fake.base_url, max_retries=2) as sdk:
        started = time.monotonic()
        message = await sdk.messages.create(model=MODEL, max_tokens=10, messages=[user("hi")])
        elapsed = time.monotonic() - started
    assert message.content[0].type == "text"
    assert [entry.status for entry in fake.log] == [429, 200]
    assert fake.log[1].headers["x-stainless-retry-count"] == "1"
    assert elapsed < 0.9  # the 20 ms header won over "retry-after: 1" and the 0.5 s default backoff


async def test_overloaded_and_internal_errors_surface(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.faults.fail_next(1, Fault("overloaded"))
    fake.script.push_error(Fault("api_error"))
    with pytest.raises(anthropic.OverloadedError) as overloaded:
        await client.messages.create(model=MODEL, max_tokens=10, messages=[user("hi")])
    body: Any = overloaded.value.body
    assert overloaded.value.status_code == 529 and body["error"]["type"] == "overloaded_error"
    with pytest.raises(anthropic.InternalServerError) as internal:
        await client.messages.create(model=MODEL, max_tokens=10, messages=[user("hi")])
    assert internal.value.status_code == 500
    assert [(e.status, e.fault) for e in fake.log] == [(529, "overloaded"), (500, "api_error")]


async def test_hang_hits_the_client_timeout(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    fake.faults.fail_next(1, Fault("hang", hang_seconds=30))
    started = time.monotonic()
    with pytest.raises(anthropic.APITimeoutError):
        await client.with_options(timeout=0.3).messages.create(
            model=MODEL, max_tokens=10, messages=[user("x")]
        )
    assert time.monotonic() - started < 5
    assert fake.log[-1].fault == "hang" and fake.log[-1].status is None  # no answer was ever sent
    fake.faults.fail_next(1, Fault("hang", hang_seconds=0.2))
    fake.script.push_text("late but fine")
    slow = await client.messages.create(model=MODEL, max_tokens=10, messages=[user("x")])
    assert slow.content[0].type == "text" and slow.content[0].text == "late but fine"
    assert (fake.log[-1].fault, fake.log[-1].status) == ("hang", 200)


async def test_malformed_body_raises_instead_of_hanging(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.faults.fail_next(1, Fault("malformed"))
    # anthropic 2.14 does not wrap this: a 200 with broken JSON raises json.JSONDecodeError.
    with pytest.raises(json.JSONDecodeError):
        await asyncio.wait_for(client.messages.create(model=MODEL, max_tokens=10, messages=[user("x")]), 5)
    fake.faults.fail_next(1, Fault("malformed", content_type="text/html"))
    returned = await client.messages.create(model=MODEL, max_tokens=10, messages=[user("x")])
    assert isinstance(returned, str)  # the SDK hands back the raw text: callers must check the type


async def test_fraction_of_failures_is_seeded(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    async def pattern(seed: int) -> list[int]:
        fake.reset()
        fake.faults.fail_fraction(0.5, Fault("api_error"), seed=seed)
        for _ in range(20):
            try:
                await client.messages.create(model=MODEL, max_tokens=10, messages=[user("x")])
            except anthropic.InternalServerError:
                pass
        return [entry.status or 0 for entry in fake.log]

    first, again, other = await pattern(7), await pattern(7), await pattern(8)
    assert first == again and first != other
    assert 3 <= first.count(500) <= 17  # p = 0.5 over 20: outside this band has chance < 0.3%


async def test_scripts_keyed_by_kind_do_not_consume_each_other(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    from memory.compaction.prompts import COMPACT_SYSTEM, task_block
    from memory.compaction.summarizer import CompactTask

    fake.script.push_text("reply script", match="reply")
    task = task_block([CompactTask("compress", 0, 0, author="Pia", text="see you at 8")])
    compaction = await client.messages.create(
        model=MODEL, max_tokens=300, system=COMPACT_SYSTEM, messages=[user(task)]
    )
    assert compaction.content[0].type == "text" and compaction.content[0].text.startswith("Pia: see you at 8")
    reply = await client.messages.create(model=MODEL, max_tokens=50, messages=[user("hi")])
    assert reply.content[0].type == "text" and reply.content[0].text == "reply script"
    assert [entry.kind for entry in fake.requests()] == ["compact", "reply"]


async def test_control_surface_of_a_separate_process() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.fakes.anthropic_api", "--port", "0",
        cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 20)).decode()
        base_url = line.strip().rsplit(" ", 1)[-1]
        async with aiohttp.ClientSession() as session:
            script = {"items": [{"text": "scripted remotely"}, {"error": {"kind": "overloaded"}}]}
            async with session.post(f"{base_url}/_fake/script", json=script) as response:
                assert (await response.json()) == {"queued": 2}
            async with anthropic.AsyncAnthropic(api_key="t", base_url=base_url, max_retries=0) as sdk:
                message = await sdk.messages.create(model=MODEL, max_tokens=10, messages=[user("hi")])
                assert message.content[0].type == "text" and message.content[0].text == "scripted remotely"
                with pytest.raises(anthropic.OverloadedError):
                    await sdk.messages.create(model=MODEL, max_tokens=10, messages=[user("hi")])
            async with session.post(f"{base_url}/_fake/clock", json={"advance": 3600}) as response:
                assert (await response.json())["now"] > 3600
            async with session.get(f"{base_url}/_fake/log") as response:
                entries = (await response.json())["entries"]
            assert [entry["status"] for entry in entries] == [200, 529]
            async with session.post(f"{base_url}/_fake/reset") as response:
                assert response.status == 200
            async with session.get(f"{base_url}/_fake/log") as response:
                assert (await response.json())["entries"] == []
    finally:
        process.terminate()
        await process.wait()
