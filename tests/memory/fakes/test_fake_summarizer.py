"""The fake summarizer: its size model, determinism, retry/failure knobs and invariant guards."""

from __future__ import annotations

import math
import random
from statistics import mean

import pytest

from memory.compaction.summarizer import CompactTask, SummarizerError
from memory.fakes.size_model import (
    COMPRESS_FLOOR,
    JITTER,
    OVERSHOOT_MAX,
    OVERSHOOT_MIN,
    WORD_SLACK,
    compress_size,
    fake_compress_line,
    fake_compress_try,
    fake_merge_line,
    fake_merge_try,
    first_try_overshoot,
    merge_size,
    node_seed,
    size_model_description,
)
from memory.fakes.summarizer import FakeSummarizer, check_compactor_input

WORDS = ["plan", "friday", "game", "night", "bring", "snacks", "catan", "box", "map", "usual"]
WORDS += ["place", "seven", "pm", "café", "naïve", "🎲"]  # bytes of 2 to 4: cuts must respect them


def _text(size: int, rng: random.Random) -> str:
    """Chat-like text of at least ``size`` bytes, with some non-ASCII words and newlines."""
    parts: list[str] = []
    while len(" ".join(parts).encode()) < size:
        parts.append(rng.choice(WORDS) + ("\n" if rng.random() < 0.05 else ""))
    return " ".join(parts)


def _nbytes(text: str | None) -> int:
    assert text is not None
    return len(text.encode())


def _compress(index: int, size: int = 900, author: str = "Mira") -> CompactTask:
    return CompactTask("compress", 0, index, author=author, text=_text(size, random.Random(index)))


def _merge(level: int, index: int, left_size: int = 300, right_size: int = 300) -> CompactTask:
    rng = random.Random(level * 1000 + index)
    left = "Mira: " + _text(left_size - 6, rng)
    right = "Jonas: " + _text(right_size - 7, rng)
    return CompactTask("merge", level, index, left=left, right=right)


# ---------------------------------------------------------------------------------------------
# The size model


def test_compress_sizes_follow_the_model_within_jitter() -> None:
    rng = random.Random(1)
    sizes = []
    for index in range(300):
        text = _text(rng.randrange(100, 1400), rng)
        seed = node_seed(0, index)
        line = fake_compress_line("Mira", text, seed)
        base = max(COMPRESS_FLOOR, 0.5 * len(f"Mira: {text}".encode()))
        assert _nbytes(line) <= compress_size(len(f"Mira: {text}".encode()), seed) <= 512
        assert _nbytes(line) <= min(512, base * (1 + JITTER) + 1)
        assert _nbytes(line) >= min(512, base * (1 - JITTER)) - WORD_SLACK - 4  # 4: one cut emoji
        assert line.startswith("Mira: ")
        assert "\n" not in line
        assert " ".join(f"Mira: {text}".split()).startswith(line)  # extractive, whole characters
        sizes.append(_nbytes(line) / min(512, base))
    assert min(sizes) < 0.95 and max(sizes) > 1.03  # the jitter is really there
    assert 0.95 < mean(sizes) < 1.02


def test_merge_sizes_follow_the_model_and_keep_both_names() -> None:
    for index in range(200):
        task = _merge(3, index, 80 + index * 2, 400 - index)
        seed = node_seed(3, index)
        line = fake_merge_line(task.left, task.right, seed)
        a, b = _nbytes(task.left), _nbytes(task.right)
        assert _nbytes(line) <= merge_size(a, b, seed) <= min(512, 0.8 * (a + b) * (1 + JITTER) + 1)
        assert _nbytes(line) >= min(512, 0.8 * (a + b) * (1 - JITTER)) - 2 * WORD_SLACK - 8
        assert line.startswith("Mira: ")
        assert " ; Jonas: " in line


def test_small_inputs_are_not_padded() -> None:
    assert fake_compress_line("Pia", "hi all", "0:1") == "Pia: hi all"
    one_sided = fake_merge_line("Pia: see you all on friday at seven", "", "1:0")
    assert one_sided.startswith("Pia: see") and ";" not in one_sided and one_sided == one_sided.strip()


def test_size_model_description_states_the_numbers() -> None:
    text = size_model_description(overshoot_rate=0.1)
    for needle in ("min(512, max(60, 0.5 x input bytes))", "0.8 x (a + b)", "0.90", "1.10", "5-40", "10%"):
        assert needle in text


def test_first_try_overshoot_rate_and_range() -> None:
    assert all(first_try_overshoot(k, 0.0) == 0 for k in range(500))
    assert all(OVERSHOOT_MIN <= first_try_overshoot(k, 1.0) <= OVERSHOOT_MAX for k in range(500))
    hits = [first_try_overshoot(node_seed(1, k), 0.3) for k in range(2000)]
    assert 0.26 < sum(1 for h in hits if h) / len(hits) < 0.34
    assert {h for h in hits if h} == set(range(OVERSHOOT_MIN, OVERSHOOT_MAX + 1))


def test_try_functions_overshoot_only_on_the_first_try() -> None:
    task = _compress(5, 1500)
    first = fake_compress_try(task.author, task.text, "s", 1, 1.0)
    second = fake_compress_try(task.author, task.text, "s", 2, 1.0)
    assert 512 + OVERSHOOT_MIN <= _nbytes(first) <= 512 + OVERSHOOT_MAX
    assert second == fake_compress_line(task.author, task.text, "s")
    merge = _merge(2, 0, 400, 400)
    assert _nbytes(fake_merge_try(merge.left, merge.right, "m", 1, 1.0)) > 512
    assert _nbytes(fake_merge_try(merge.left, merge.right, "m", 2, 1.0)) <= 512


# ---------------------------------------------------------------------------------------------
# FakeSummarizer


async def test_same_input_gives_the_same_batch() -> None:
    tasks = [_compress(0), _compress(1), _merge(1, 0)]
    context = ["Mira: earlier line", "Jonas: another one"]
    one, two = FakeSummarizer(overshoot_rate=0.5), FakeSummarizer(overshoot_rate=0.5)
    first = await one.summarize(context, tasks)
    second = await two.summarize(context, tasks)
    assert first.lines == second.lines
    assert first.tries == second.tries
    assert first.usage == second.usage
    assert first.usage.model == "fake"
    assert all(line is not None and _nbytes(line) <= 512 for line in first.lines)


async def test_overshoot_rate_one_takes_two_tries_and_keeps_the_fitting_line() -> None:
    fake = FakeSummarizer(overshoot_rate=1.0)
    tasks = [_compress(k, 1200) for k in range(4)] + [_merge(1, k, 400, 400) for k in range(4)]
    batch = await fake.summarize([], tasks)
    assert batch.tries == [2] * 8
    assert all(_nbytes(line) <= 512 for line in batch.lines)
    assert batch.usage.calls == 2 and fake.requests == 2  # the retry is a second request
    one_try = await FakeSummarizer(overshoot_rate=0.0).summarize([], tasks)
    assert one_try.lines == batch.lines and one_try.tries == [1] * 8
    assert batch.usage.input_tokens > 2 * one_try.usage.input_tokens  # the conversation is re-sent
    assert batch.usage.output_tokens > 2 * one_try.usage.output_tokens


async def test_with_one_try_the_too_long_line_is_kept() -> None:
    batch = await FakeSummarizer(overshoot_rate=1.0, tries=1).summarize([], [_compress(0, 1200)])
    assert batch.tries == [1]
    assert 512 < _nbytes(batch.lines[0]) <= 512 + OVERSHOOT_MAX


async def test_the_too_long_round_waits_for_the_row_to_be_current() -> None:
    """As the Anthropic summarizer: the second request is asked for only when a line needs it,
    and not sent once the row moved (the first tries stand, over the limit)."""
    asked: list[bool] = []

    async def moved() -> bool:
        asked.append(False)
        return False

    fake = FakeSummarizer(overshoot_rate=1.0)
    batch = await fake.summarize([], [_compress(0, 1200)], still_current=moved)
    assert asked == [False] and batch.tries == [1] and fake.requests == 1
    assert 512 < _nbytes(batch.lines[0]) <= 512 + OVERSHOOT_MAX
    await FakeSummarizer(overshoot_rate=0.0).summarize([], [_compress(0, 1200)], still_current=moved)
    assert asked == [False], "a call of one request asks nothing"


async def test_fail_rate_is_deterministic_and_retries_succeed() -> None:
    async def run(fake: FakeSummarizer) -> list[list[bool]]:
        outcomes: list[list[bool]] = []
        for index in range(20):
            task = _compress(index, 700)
            node_outcomes: list[bool] = []
            for _ in range(40):
                try:
                    batch = await fake.summarize([], [task])
                except SummarizerError:
                    node_outcomes.append(False)
                    continue
                node_outcomes.append(True)
                assert batch.lines[0] is not None
                break
            assert node_outcomes[-1], f"node {index} never succeeded"
            outcomes.append(node_outcomes)
        return outcomes

    first = await run(FakeSummarizer(fail_rate=0.5))
    second = await run(FakeSummarizer(fail_rate=0.5))
    assert first == second
    failures = sum(outcome.count(False) for outcome in first)
    assert 5 <= failures <= 60  # about one failure per node at rate 0.5
    assert any(len(outcome) > 1 for outcome in first)


async def test_fail_rate_one_always_fails_and_counts() -> None:
    fake = FakeSummarizer(fail_rate=1.0)
    for _ in range(3):
        with pytest.raises(SummarizerError):
            await fake.summarize([], [_compress(0)])
    assert fake.failed_calls == 3 and fake.calls == 3
    assert fake.attempts[(0, 0)] == 3 and not fake.builds


async def test_empty_rate_gives_none_and_no_build() -> None:
    fake = FakeSummarizer(empty_rate=1.0)
    batch = await fake.summarize([], [_compress(0), _merge(1, 0)])
    assert batch.lines == [None, None]
    assert not fake.builds
    partial = FakeSummarizer(empty_rate=0.5)
    lines = [(await partial.summarize([], [_compress(k)])).lines[0] for k in range(100)]
    assert 30 < sum(1 for line in lines if line is None) < 70


async def test_counters_record_each_node_once() -> None:
    fake = FakeSummarizer()
    await fake.summarize([], [_compress(0), _compress(1)])
    await fake.summarize(["Mira: x"], [_merge(1, 0)])
    assert fake.calls == 2 and fake.tasks == 3 and fake.requests == 2
    assert fake.builds == {(0, 0): 1, (0, 1): 1, (1, 0): 1}
    assert fake.tries_by_node == {(0, 0): 1, (0, 1): 1, (1, 0): 1}
    assert fake.usage.calls == 2


async def test_usage_counts_the_context_at_four_bytes_a_token() -> None:
    task = [_compress(0)]
    bare = await FakeSummarizer().summarize([], task)
    context = ["Mira: " + "x" * 994] * 8  # 8 lines of 1000 bytes, plus 8 newlines
    full = await FakeSummarizer().summarize(context, task)
    assert full.usage.input_tokens - bare.usage.input_tokens == pytest.approx(8008 / 4, abs=2)
    assert full.usage.output_tokens == bare.usage.output_tokens == math.ceil(_nbytes(bare.lines[0]) / 4)


# ---------------------------------------------------------------------------------------------
# Guards


async def test_guards_accept_a_clean_call_with_digit_heavy_text() -> None:
    texts = {0: "2+2 is 4 | and #5 is next"}
    fake = FakeSummarizer(full_text_lookup=texts.__getitem__)
    task = CompactTask("compress", 0, 0, author="Pia", text=texts[0])
    batch = await fake.summarize(["Mira: 10+2 people came"], [task])
    assert batch.lines == ["Pia: 2+2 is 4 | and #5 is next"]


@pytest.mark.parametrize(
    ("context", "task", "expected"),
    [
        (["40+8 2026-01-03|the winter"], _compress(0), r"context line 0: starts with an id\+n head"),
        (["Mira: ok", "1800+1|x"], _compress(0), r"context line 1: starts with an id\+n head"),
        (["#1801 2026-10-14 21:03 Pia: hi"], _compress(0), "context line 0: starts with a raw-tail head"),
        (["(not summarized yet: 8 messages)"], _compress(0), "context line 0: holds placeholder"),
        ([], CompactTask("merge", 1, 0, left="0+1 2026-01-01|Mira: a", right="Jonas: b"), r"left: .*id\+n"),
        (
            [],
            CompactTask("merge", 1, 0, left="Mira: a", right="(not summarized yet)"),
            "right: holds placeholder",
        ),
        (
            [],
            CompactTask("compress", 0, 3, author="Pia", text="a long story …[cut]"),
            "ends with a cut marker",
        ),
        (
            [],
            CompactTask("compress", 0, 3, author="Pia", text="12+4 2026-01-03..2026-01-04|x"),
            "id\\+n head",
        ),
    ],
)
async def test_guards_raise(context: list[str], task: CompactTask, expected: str) -> None:
    fake = FakeSummarizer()
    with pytest.raises(AssertionError, match=expected):
        await fake.summarize(context, [task])
    assert not fake.builds


def test_guard_checks_the_message_is_whole() -> None:
    logged = {7: "the whole message, with its end"}
    cut = CompactTask("compress", 0, 7, author="Pia", text="the whole message,")
    with pytest.raises(AssertionError, match=r"\(0, 7\): the message is not the whole logged text"):
        check_compactor_input([], [cut], logged.__getitem__)
    check_compactor_input([], [cut])  # without a log to compare with, only markers are checked
