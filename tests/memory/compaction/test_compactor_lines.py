"""Reading a model's lines: the tolerant forms of a multi-task answer, and overshoots of a few
bytes cut here instead of a second request (pure, plus the HTTP fake for the request count)."""

from __future__ import annotations

from memory.claude import make_client
from memory.compaction.anthropic_summarizer import AnthropicSummarizer
from memory.compaction.prompts import parse_lines, trim_overshoot
from memory.compaction.summarizer import CompactTask
from tests.fakes.anthropic_api import FakeAnthropic


def test_the_out_form_and_the_forms_a_model_writes_instead_are_read() -> None:
    assert parse_lines('<out n="2">b</out>\n<out n="1">a</out>', 2) == ["a", "b"]
    assert parse_lines("1. Pia booked the court\n2) Max brings balls\nStep 3: Lo is late", 3) == [
        "Pia booked the court",
        "Max brings balls",
        "Lo is late",
    ]
    assert parse_lines("Pia booked the court\n\nMax brings balls", 2) == [
        "Pia booked the court",
        "Max brings balls",
    ]
    # A numbered-looking first word of a plain line is kept when the numbers are not 1..count.
    assert parse_lines("2 people came\n7 left early", 2) == ["2 people came", "7 left early"]


def test_an_answer_that_cannot_be_split_into_the_steps_answers_none() -> None:
    assert parse_lines("One line for everything.", 4) == [None, None, None, None]
    assert parse_lines("a\nb\nc", 2) == [None, None]


def test_a_small_overshoot_is_cut_at_a_word_boundary_and_a_large_one_is_not() -> None:
    line = "word " * 110  # 550 bytes with the trailing space
    cut = trim_overshoot(line.strip(), 512, 48)
    assert cut is not None and len(cut.encode()) <= 512 and cut.endswith("word")
    assert len(cut.encode()) >= 512 - 5  # only the last partial word went
    assert trim_overshoot("x" * 600, 512, 48) is None  # 88 over: ask the model again
    assert trim_overshoot("short", 512, 48) == "short"
    assert trim_overshoot("é" * 260, 512, 48) == "é" * 256  # never inside a UTF-8 character


async def test_overshooting_first_tries_cost_no_second_request_with_a_trim_slack() -> None:
    tasks = [CompactTask("compress", 0, k, author="Pia", text="tangerine " * 120 + str(k)) for k in range(4)]
    async with FakeAnthropic(overshoot_rate=1.0) as fake:  # every first try is 5-40 bytes over
        client = make_client("test", fake.base_url, timeout=5.0, max_retries=0)
        trimming = AnthropicSummarizer(client, model="claude-haiku-5-5", trim_slack=48)
        batch = await trimming.summarize([], tasks)
        assert len(fake.requests("compact")) == 1 and batch.usage.calls == 1
        assert all(line is not None and len(line.encode()) <= 512 for line in batch.lines)
        asking = AnthropicSummarizer(client, model="claude-haiku-5-5")  # trim_slack 0: as before
        await asking.summarize([], tasks)
        await client.close()
    assert len(fake.requests("compact")) == 3  # the second summarizer needed a retry request
