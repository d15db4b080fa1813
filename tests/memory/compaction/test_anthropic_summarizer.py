"""AnthropicSummarizer through the real SDK against the local fake over HTTP.

The fake answers compaction calls with memory.fakes.summarizer's size model (compress ~0.5x the
input, merge ~0.8x the children, capped at 512; at overshoot rate 1.0 every first try is 517..552
bytes and the retry after "Too long" fits). The client is built with the SDK's default 2 retries,
as for replies: the summarizer must take them away (one request per failure).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anthropic
import pytest
from structlog.testing import capture_logs

from memory.claude import failure_reason, make_client
from memory.compaction.anthropic_summarizer import AnthropicSummarizer, max_tokens_for
from memory.compaction.prompts import COMPACT_SYSTEM, context_block, task_block
from memory.compaction.summarizer import CompactTask, SummarizerError
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault, ScriptedReply, text_block

MODEL = "claude-haiku-4-5"
SECRET = "zebrafinch"  # a word in every task; it must never reach a log line
CONTEXT = [
    "Pia: planned the Oslo trip for May 3",
    "Tom: will book the train; Ana: asked about hostels near the station",
]
LONG_TEXT = (
    f"ok so the {SECRET} plan is: we meet at 8 at the Blue Bar on Friday, Tom brings the tickets, "
    "I bring snacks, and if it rains we go to the cinema on King Street instead. Ana, you said "
    "you might be late, just text me when you leave work. Also the hostel wants the deposit by "
    "Wednesday, 40 euros each, send it to me by bank transfer, the details are in the pinned "
    "message. Then on Saturday we take the 9:15 train to Bergen, which arrives at 16:07, and "
    "Tom's cousin picks us up at the station with his van so bring small bags please."
)
MERGE_LEFT = f"Pia: meet at 8 at the Blue Bar on Friday; Tom: brings the {SECRET} tickets and the map"
MERGE_RIGHT = "Ana: might be late, will text when leaving work; Pia: hostel deposit 40 euros by Wednesday"


def nbytes(text: str | None) -> int:
    assert text is not None
    return len(text.encode("utf-8"))


def compress(text: str = LONG_TEXT, author: str = "Pia", index: int = 0) -> CompactTask:
    return CompactTask("compress", 0, index, author=author, text=text)


def merge(index: int = 0) -> CompactTask:
    return CompactTask("merge", 1, index, left=MERGE_LEFT, right=MERGE_RIGHT)


@pytest.fixture
def summarizer(client: anthropic.AsyncAnthropic) -> AnthropicSummarizer:
    return AnthropicSummarizer(client, model=MODEL)


def logged_usage(fake: FakeAnthropic, key: str) -> int:
    return sum(int((entry.usage or {}).get(key, 0)) for entry in fake.requests())


async def test_compress_request_shape_and_line(fake: FakeAnthropic, summarizer: AnthropicSummarizer) -> None:
    batch = await summarizer.summarize(CONTEXT, [compress()])
    [line] = batch.lines
    assert line is not None and line.startswith("Pia: ok so the") and nbytes(line) <= 512
    # compress = ~0.5 x the 'Pia: ...' input, +-10% jitter
    assert 0.45 * nbytes(f"Pia: {LONG_TEXT}") - 1 <= nbytes(line) <= 0.55 * nbytes(f"Pia: {LONG_TEXT}") + 1
    assert batch.tries == [1]
    [entry] = fake.requests()
    body = entry.body
    assert entry.kind == "compact" and body["model"] == MODEL and "tools" not in body
    assert body["system"] == [{"type": "text", "text": COMPACT_SYSTEM}]
    assert body["max_tokens"] == max_tokens_for(1) == 400
    [turn] = body["messages"]
    assert turn["role"] == "user"
    assert turn["content"] == [
        {"type": "text", "text": context_block(CONTEXT), "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": task_block([compress()])},
    ]
    usage = batch.usage
    assert (usage.model, usage.calls) == (MODEL, 1)
    assert usage.input_tokens == logged_usage(fake, "input_tokens") > 0
    assert usage.output_tokens == logged_usage(fake, "output_tokens") > 0


async def test_the_system_prompt_holds_the_ruler_and_answer_form(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    """The parts that are the same on every call (the ruler of the line limit and the several
    steps answer form) are in the system prompt, before the cached context; the task block after
    the cache mark holds only what changes: the step count, the heads and the inputs."""
    summarizer = AnthropicSummarizer(client, model=MODEL, node_bytes=300)
    await summarizer.summarize(CONTEXT, [compress(), merge(1)])
    [entry] = fake.requests()
    [system] = entry.body["system"]
    assert system["text"].startswith(COMPACT_SYSTEM.split("\n\n")[0])
    assert system["text"].endswith(
        "this ruler is exactly 300 bytes long, the most a line may take:\n" + "-" * 300
    )
    assert '<out n="K">the line</out> with K the step number' in system["text"]
    context, task = entry.body["messages"][0]["content"]
    assert "cache_control" in context and "cache_control" not in task
    assert "---" not in task["text"] and "ruler" not in task["text"]
    assert task["text"].startswith(
        'Do these 2 steps, each answered as <out n="K">the line</out>:\n\nStep 1. '
    )
    assert "at most 300 bytes" in task["text"]


async def test_merge_keeps_every_speaker(summarizer: AnthropicSummarizer) -> None:
    batch = await summarizer.summarize(CONTEXT, [merge()])
    [line] = batch.lines
    assert line is not None and all(name in line for name in ("Pia:", "Tom:", "Ana:"))
    expected = 0.8 * (nbytes(MERGE_LEFT) + nbytes(MERGE_RIGHT))
    assert 0.9 * expected - 1 <= nbytes(line) <= 1.1 * expected + 1


async def test_several_tasks_in_one_request(fake: FakeAnthropic, summarizer: AnthropicSummarizer) -> None:
    tasks = [compress(), merge(), compress("sounds good, I'll bring the umbrella", "Tom", 1)]
    batch = await summarizer.summarize(CONTEXT, tasks)
    assert len(fake.requests()) == 1 and batch.usage.calls == 1 and batch.tries == [1, 1, 1]
    assert fake.requests()[0].body["max_tokens"] == max_tokens_for(3)
    # The fake's lines depend only on each task's input, so one task per call gives the same lines.
    singles = [(await summarizer.summarize(CONTEXT, [task])).lines[0] for task in tasks]
    assert batch.lines == singles and all(line is not None for line in batch.lines)
    assert batch.lines[2] is not None and batch.lines[2].startswith("Tom: sounds good")


async def test_too_long_is_retried_in_the_same_conversation(
    fake: FakeAnthropic, summarizer: AnthropicSummarizer
) -> None:
    fake.compactor.overshoot_rate = 1.0
    batch = await summarizer.summarize(CONTEXT, [compress()])
    first, second = fake.requests()
    messages = second.body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0] == first.body["messages"][0]  # the same first turn, so the cache is read
    first_reply = messages[1]["content"]  # the fake's log holds requests; the reply comes back here
    assert 512 + 5 <= nbytes(first_reply) <= 512 + 40  # the overshooting first try, as sent back
    follow_up = messages[2]["content"]
    assert follow_up.startswith("Too long: your line is") and follow_up.endswith("| ← LIMIT")
    assert first_reply.encode()[:512].decode(errors="ignore") in follow_up
    [line] = batch.lines
    assert line is not None and nbytes(line) <= 512 and line.startswith("Pia:")
    assert batch.tries == [2] and batch.usage.calls == 2
    assert batch.usage.output_tokens == logged_usage(fake, "output_tokens")
    assert batch.usage.input_tokens == logged_usage(fake, "input_tokens")


async def test_multi_step_retry_names_only_the_long_steps(
    fake: FakeAnthropic, summarizer: AnthropicSummarizer
) -> None:
    fake.compactor.overshoot_rate = 1.0
    tasks = [compress(), merge()]
    batch = await summarizer.summarize(CONTEXT, tasks)
    _first, second = fake.requests()
    follow_up = second.body["messages"][2]["content"]
    assert "Too long: step 1 is" in follow_up and "Too long: step 2 is" in follow_up
    assert follow_up.count("| ← LIMIT") == 2
    assert all(line is not None and nbytes(line) <= 512 for line in batch.lines)
    assert batch.tries == [2, 2]


async def test_tries_bound_the_requests_and_the_shortest_is_kept(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.compactor.overshoot_rate = 1.0
    batch = await AnthropicSummarizer(client, model=MODEL, tries=1).summarize(CONTEXT, [compress()])
    assert len(fake.requests()) == 1 and batch.tries == [1]
    assert 517 <= nbytes(batch.lines[0]) <= 552  # kept as is: the compactor decides what to do
    # Scripted: every try too long, the third the shortest; 3 tries -> 3 requests, keep the third.
    fake.reset()
    for size in (600, 580, 530):
        fake.script.push_text("Pia: " + "x" * (size - 5), match="compact")
    batch = await AnthropicSummarizer(client, model=MODEL, tries=3).summarize(CONTEXT, [compress()])
    assert len(fake.requests()) == 3 and batch.tries == [3] and nbytes(batch.lines[0]) == 530
    assert [m["role"] for m in fake.requests()[-1].body["messages"]] == ["user", "assistant"] * 2 + ["user"]


async def test_an_empty_reply_fails_the_node(fake: FakeAnthropic, summarizer: AnthropicSummarizer) -> None:
    fake.script.push(ScriptedReply([]), match="compact")
    assert (await summarizer.summarize(CONTEXT, [compress()])).lines == [None]
    fake.script.push(ScriptedReply([text_block('<out n="1">Pia: plan for Friday</out>')]), match="compact")
    batch = await summarizer.summarize(CONTEXT, [compress(), merge()])
    assert batch.lines == ["Pia: plan for Friday", None] and len(fake.requests()) == 2


async def test_the_context_is_cached_across_calls(summarizer: AnthropicSummarizer) -> None:
    # Haiku 4.5 caches prefixes of 4,096+ tokens: ~20 KB of context (+ the ~2.4 KB system).
    context = [f"Member{i % 7}: talked about item {i} of the trip plan, " + "detail " * 30 for i in range(80)]
    first = await summarizer.summarize(context, [compress()])
    assert first.usage.cache_write_5m_tokens > 4096 and first.usage.cache_read_tokens == 0
    second = await summarizer.summarize(context, [merge()])
    # The second task differs, but system + context is the same prefix: read at 0.1x.
    assert second.usage.cache_read_tokens == first.usage.cache_write_5m_tokens
    assert second.usage.cache_write_5m_tokens == 0


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        (Fault("rate_limit", retry_after=0.01), "rate limited (429)"),
        (Fault("overloaded", retry_after=0.01), "overloaded (529)"),
        (Fault("api_error"), "server error (500)"),
        (Fault("malformed"), "bad response"),
        (Fault("malformed", content_type="text/html"), "bad response"),
    ],
)
async def test_a_failed_call_raises_summarizer_error_logged_once_without_text(
    fake: FakeAnthropic,
    summarizer: AnthropicSummarizer,
    caplog: pytest.LogCaptureFixture,
    fault: Fault,
    reason: str,
) -> None:
    fake.faults.fail_next(1, fault)
    caplog.set_level(logging.INFO)
    with capture_logs() as events, pytest.raises(SummarizerError) as failure:
        await summarizer.summarize(CONTEXT, [compress(), merge()])
    assert str(failure.value) == reason
    assert len(fake.requests()) == 1  # no SDK retry: the compactor's RETRY loop retries
    assert events == [
        {
            "event": "compact_call_failed",
            "log_level": "warning",
            "model": MODEL,
            "reason": reason,
            "tasks": 2,
            "request": 1,
        },
    ]
    assert SECRET not in repr(events) and SECRET not in caplog.text
    # The compactor's next round (after RETRY) gets its lines: the fault was one request.
    batch = await summarizer.summarize(CONTEXT, [compress(), merge()])
    assert all(line is not None for line in batch.lines)


async def test_a_hang_hits_the_timeout(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    summarizer = AnthropicSummarizer(client, model=MODEL, timeout=0.3)
    fake.faults.fail_next(1, Fault("hang", hang_seconds=10))
    started = time.monotonic()
    with capture_logs() as events, pytest.raises(SummarizerError, match=r"^timeout$"):
        await summarizer.summarize(CONTEXT, [compress()])
    assert time.monotonic() - started < 3  # one 0.3 s attempt, not the SDK's 3 nor the fake's 10 s
    assert len(fake.requests()) == 1
    assert [e["reason"] for e in events] == ["timeout"] and SECRET not in repr(events)


async def test_a_failed_retry_keeps_the_lines_already_paid_for(
    fake: FakeAnthropic, summarizer: AnthropicSummarizer
) -> None:
    fake.script.push_text("Pia: " + "y" * 595, match="compact")
    fake.script.push_error(Fault("overloaded"), match="compact")
    with capture_logs() as events:
        batch = await summarizer.summarize(CONTEXT, [compress()])
    assert nbytes(batch.lines[0]) == 600 and batch.tries == [1]
    assert batch.usage.calls == 1 and batch.usage.output_tokens == logged_usage(fake, "output_tokens")
    assert [(e["reason"], e["request"]) for e in events] == [("overloaded (529)", 2)]


async def test_no_tasks_no_request(fake: FakeAnthropic, summarizer: AnthropicSummarizer) -> None:
    batch = await summarizer.summarize(CONTEXT, [])
    assert batch.lines == [] and batch.usage.calls == 0 and fake.requests() == []


def test_tries_must_be_positive(client: Any) -> None:
    with pytest.raises(ValueError, match="tries"):
        AnthropicSummarizer(client, model=MODEL, tries=0)


async def test_other_failures_have_short_reasons(
    fake: FakeAnthropic, summarizer: AnthropicSummarizer
) -> None:
    fake.faults.fail_next(1, Fault("status", status=400, error_type="invalid_request_error"))
    with pytest.raises(SummarizerError, match=r"^bad request \(400\)$"):
        await summarizer.summarize(CONTEXT, [compress()])
    port = fake.port
    await fake.stop()  # nobody listens on the port any more
    nowhere = make_client("test", f"http://127.0.0.1:{port}", timeout=1.0, max_retries=2)
    with pytest.raises(SummarizerError, match=r"^connection error$"):
        await AnthropicSummarizer(nowhere, model=MODEL).summarize(CONTEXT, [compress()])
    await nowhere.close()
    assert failure_reason(RuntimeError(SECRET)) == "unexpected error (RuntimeError)"
