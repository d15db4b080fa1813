"""The fake's deterministic compactor, through the real SDK, with requests built by memory.compaction.prompts.

Size model (docs/design.md section 12): compress = min(512, max(60, 0.5 x input bytes)), merge =
min(512, 0.8 x (a + b)), each x a deterministic jitter in [0.9, 1.1]; at overshoot rate 1.0 every
first try is 517..552 bytes, and the retry after "Too long" is within 512.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anthropic

from memory.compaction.prompts import COMPACT_SYSTEM, context_block, parse_lines, task_block, too_long_block
from memory.compaction.summarizer import CompactTask
from tests.fakes.anthropic_api import FakeAnthropic

MODEL = "claude-haiku-5-5"
CONTEXT = ["Pia: planned the Oslo trip for May 3", "Tom: will book the train; Ana: asked about hostels"]
MESSAGE_TEXT = (
    "ok so the plan is: we meet at 8 at the Blue Bar on Friday, Tom brings the tickets, "
    "I bring snacks, and if it rains we go to the cinema on King Street instead. "
    "Ana, you said you might be late, just text me when you leave work. "
    "Also the hostel wants the deposit by Wednesday, 40 euros each, send it to me."
)


def nbytes(text: str | None) -> int:
    assert text is not None
    return len(text.encode("utf-8"))


def first_turn(tasks: Sequence[CompactTask]) -> list[Any]:
    """The compactor's first user turn: the context block (cached), then the task block."""
    context = {"type": "text", "text": context_block(CONTEXT), "cache_control": {"type": "ephemeral"}}
    return [{"role": "user", "content": [context, {"type": "text", "text": task_block(tasks)}]}]


async def compact(
    client: anthropic.AsyncAnthropic, messages: list[Any], system: str | None = COMPACT_SYSTEM
) -> str:
    kwargs: dict[str, Any] = {"system": system} if system else {}
    # max_tokens is enforced (4 bytes a token): three overshooting lines need about 420 tokens.
    message = await client.messages.create(model=MODEL, max_tokens=1000, messages=messages, **kwargs)
    assert message.content[0].type == "text"
    return message.content[0].text


def compress(text: str = MESSAGE_TEXT, author: str = "Pia", index: int = 0) -> CompactTask:
    return CompactTask("compress", 0, index, author=author, text=text)


async def test_compress_follows_the_size_model_and_keeps_the_author(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    reply = await compact(client, first_turn([compress()]))
    [line] = parse_lines(reply, 1)
    expected = 0.5 * nbytes(f"Pia: {MESSAGE_TEXT}")
    assert 0.9 * expected - 1 <= nbytes(line) <= 1.1 * expected + 1
    assert line is not None and line.startswith("Pia: ok so the plan is")
    assert fake.log[-1].kind == "compact"
    assert await compact(client, first_turn([compress()])) == reply  # deterministic


async def test_a_short_message_gets_the_60_byte_floor(client: anthropic.AsyncAnthropic) -> None:
    [line] = parse_lines(await compact(client, first_turn([compress("see you at 8", author="Tom")])), 1)
    assert 54 <= nbytes(line) <= 66 and line is not None and line.startswith("Tom: see you at 8")


async def test_merge_keeps_every_speaker(client: anthropic.AsyncAnthropic) -> None:
    left = "Pia: meet at 8 at the Blue Bar on Friday; Tom: brings the tickets and the map for the walk"
    right = "Ana: might be late, will text when leaving work; Pia: hostel deposit 40 euros by Wednesday"
    reply = await compact(client, first_turn([CompactTask("merge", 1, 0, left=left, right=right)]))
    [line] = parse_lines(reply, 1)
    expected = 0.8 * (nbytes(left) + nbytes(right))
    assert 0.9 * expected - 1 <= nbytes(line) <= 1.1 * expected + 1
    assert line is not None and all(name in line for name in ("Pia:", "Tom:", "Ana:"))


async def test_a_merge_of_long_lines_is_capped_at_512(client: anthropic.AsyncAnthropic) -> None:
    long_line = "Pia: " + "the long story of the trip " * 18
    merge = CompactTask("merge", 1, 0, left=long_line, right=long_line.replace("Pia", "Tom"))
    [line] = parse_lines(await compact(client, first_turn([merge])), 1)
    assert nbytes(line) == 512  # 0.8 x ~990 bytes is over the limit even at -10%


async def test_overshoot_on_first_try_then_within_limit_after_too_long(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.compactor.overshoot_rate = 1.0
    messages = first_turn([compress()])
    reply = await compact(client, messages)
    [line] = parse_lines(reply, 1)
    assert 512 + 5 <= nbytes(line) <= 512 + 40
    assert line is not None
    follow_up = [
        *messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": too_long_block(line, 512)},
    ]
    [retry] = parse_lines(await compact(client, follow_up), 1)
    assert retry is not None and nbytes(retry) <= 512 and retry.startswith("Pia:")
    fake.compactor.overshoot_rate = 0.0
    [calm] = parse_lines(await compact(client, messages), 1)
    assert nbytes(calm) <= 512


async def test_multi_step_answers_in_out_tags_and_retries_one_step(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.compactor.overshoot_rate = 1.0
    tasks = [
        compress(),
        compress("sounds good, I'll bring the umbrella", author="Tom", index=1),
        CompactTask("merge", 1, 0, left="Pia: plan for Friday at 8", right="Tom: brings umbrella"),
    ]
    messages = first_turn(tasks)
    reply = await compact(client, messages)
    lines = parse_lines(reply, 3)
    assert all(line is not None and 517 <= nbytes(line) <= 552 for line in lines)
    assert lines[1] is not None and lines[1].startswith("Tom:")
    second = lines[1]
    follow_up = [
        *messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": too_long_block(second, 512, step=2)},
    ]
    retried = parse_lines(await compact(client, follow_up), 3)
    assert retried[0] is None and retried[2] is None
    assert retried[1] is not None and nbytes(retried[1]) <= 512 and retried[1].startswith("Tom:")


async def test_recognised_by_the_task_head_alone(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    [line] = parse_lines(await compact(client, first_turn([compress()]), system=None), 1)
    assert line is not None and line.startswith("Pia:") and fake.log[-1].kind == "compact"
    chat = [{"role": "user", "content": "can you compress this message into one line?"}]
    reply = await compact(client, chat, system="You are Eva.")
    assert fake.log[-1].kind == "reply" and not reply.startswith("Pia:")
