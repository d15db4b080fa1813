"""A deterministic stand-in for the compactor model, for tests and benchmarks.

Its lines follow the size model of memory/fakes/size_model.py (docs/design.md section 12);
benchmarks print :func:`size_model_description` next to their figures.

:class:`FakeSummarizer` also checks, on every call, the invariants of a compactor call:
no ``id+n|`` or raw-tail ``#k date`` heads, no placeholder text, no cut message
(:func:`check_compactor_input`; a violation raises ``AssertionError``).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from memory.compaction.card_prompts import CARD_BYTES, card_system, cards_block, fit_card
from memory.compaction.prompts import (
    NODE_BYTES_DEFAULT,
    compact_system,
    context_block,
    task_block,
    too_long_block,
    trim_overshoot,
)
from memory.compaction.summarizer import (
    CallUsage,
    CardBatch,
    CardTask,
    CompactTask,
    StillCurrent,
    SummarizerError,
    SummaryBatch,
)

# Re-exported: the benchmarks take the fake's overshoot rate and description from here.
from memory.fakes.size_model import (
    MEASURED_OVERSHOOT_RATE,
    fake_compress_try,
    fake_merge_try,
    node_seed,
    size_model_description,
    unit_draw,
)
from memory.tree.node import utf8_len

__all__ = [
    "MEASURED_OVERSHOOT_RATE",
    "ContextCheck",
    "FakeSummarizer",
    "check_compactor_input",
    "size_model_description",
]

FAKE_MODEL = "fake"

# Given a call's context and tasks, how many tasks got a context that is not a run of the
# lines before their input (memory/fakes/context_check.py reads the truth from the database).
ContextCheck = Callable[[Sequence[str], Sequence[CompactTask]], Awaitable[int]]

_ID_HEAD = re.compile(r"^\s*\d+\+\d+(\s+[\d.-]+)?\s*\|")
_RAW_TAIL_HEAD = re.compile(r"^\s*#\d+ \d{4}-\d{2}-\d{2}\b")
_PLACEHOLDER = "(not summarized yet"
_CUT_MARKERS = ("[cut]", "(cut)", "[truncated]", "[…]", "[...]")


# ---------------------------------------------------------------------------------------------
# Invariant checks


def _check_bare(text: str, where: str) -> None:
    head = _ID_HEAD.match(text)
    if head:
        raise AssertionError(f"{where}: starts with an id+n head {head.group(0).strip()!r}")
    tail = _RAW_TAIL_HEAD.match(text)
    if tail:
        raise AssertionError(f"{where}: starts with a raw-tail head {tail.group(0).strip()!r}")
    if _PLACEHOLDER in text.lower():
        raise AssertionError(f"{where}: holds placeholder text {_PLACEHOLDER!r}")


def check_context(context: Sequence[str]) -> None:
    """The context half of :func:`check_compactor_input`: every line a bare line text."""
    for position, line in enumerate(context):
        _check_bare(line, f"context line {position}")


def check_compactor_input(
    context: Sequence[str],
    tasks: Sequence[CompactTask],
    full_text_lookup: Callable[[int], str] | None = None,
) -> None:
    """Raise ``AssertionError`` when a compactor call breaks an invariant (docs/design.md section 6).

    Context lines must be bare line texts; merge inputs must be bare lines; a compress input
    must be the whole message (equal to ``full_text_lookup(index)`` when given, and never ending
    in a cut marker). Messages name the place and the offending head, never the chat text.
    """
    check_context(context)
    for task in tasks:
        where = f"task {task.kind} ({task.level}, {task.index})"
        if task.kind == "compress":
            _check_bare(task.text, where)
            if _PLACEHOLDER in task.author.lower():
                raise AssertionError(f"{where}: author holds placeholder text")
            if task.text.rstrip().endswith(_CUT_MARKERS):
                raise AssertionError(f"{where}: the message ends with a cut marker")
            if full_text_lookup is not None and full_text_lookup(task.index) != task.text:
                raise AssertionError(f"{where}: the message is not the whole logged text")
        else:
            _check_bare(task.left, f"{where} left")
            _check_bare(task.right, f"{where} right")


# ---------------------------------------------------------------------------------------------
# The Summarizer


def _tokens(byte_count: int) -> int:
    return math.ceil(byte_count / 4)  # about 4 bytes per token for English chat


def _out_block(lines: Sequence[str], numbers: Sequence[int] | None) -> str:
    """The reply text a model would write (``<out n="K">`` wrappers for several steps)."""
    if numbers is None:
        return "\n".join(lines)
    return "\n".join(f'<out n="{k}">{line}</out>' for k, line in zip(numbers, lines, strict=True))


def fake_card(task: CardTask, card_bytes: int = CARD_BYTES) -> str | None:
    """A card made of the person's lines' own words (nothing else reaches it), sized like a
    model's: half the input, at least 60 bytes, at most CARD_BYTES."""
    source = " ".join(task.lines)
    if not source:
        return None
    size = min(card_bytes, max(60, utf8_len(source) // 2))
    return fit_card(source, size) or None


class FakeSummarizer:
    """A deterministic :class:`~memory.compaction.summarizer.Summarizer` with failure knobs and counters.

    Knobs (all draws are SHA-256 of the node address, so a run is reproducible):

    - ``overshoot_rate``: chance that a task's first try is 5..40 bytes too long; then a second
      try (another request in the same conversation) fits. With ``tries == 1`` the too-long line
      is returned as is, as the real loop would keep it.
    - ``fail_rate``: chance that a whole call raises :class:`SummarizerError`; drawn from every
      task's address and how many calls that node has had, so a retry gets a fresh draw and
      eventually succeeds (unless the rate is 1).
    - ``empty_rate``: chance that a task's reply is empty (its line is ``None``), drawn the same way.
    - ``delay``: seconds to sleep inside each call (to observe calls in flight).
    - ``trim_slack``: a first try at most this many bytes over the limit is cut at a word boundary
      (memory/compaction/prompts.py ``trim_overshoot``) instead of a second try, as the real summarizer does.
    - ``context_check``: on every call, how many tasks got a context that is not a run of the
      lines before their input (memory/fakes/context_check.py); counted in ``context_violations``.

    Counters: ``calls`` (summarize invocations), ``failed_calls``, ``requests`` (model requests,
    a retry round counted too), ``tasks``, ``attempts[(level, index)]`` (calls that carried the
    node), ``builds[(level, index)]`` (lines returned for it), ``tries_by_node``, and ``usage``
    (the sum of every batch's usage; tokens are bytes / 4 of the prompt and the replies).
    """

    def __init__(
        self,
        *,
        overshoot_rate: float = 0.0,
        fail_rate: float = 0.0,
        empty_rate: float = 0.0,
        tries: int = 5,
        node_bytes: int = NODE_BYTES_DEFAULT,
        delay: float = 0.0,
        full_text_lookup: Callable[[int], str] | None = None,
        trim_slack: int = 0,
        context_check: ContextCheck | None = None,
        context_strict: bool = True,
    ) -> None:
        if tries < 1:
            raise ValueError("tries must be at least 1")
        self.overshoot_rate = overshoot_rate
        self.fail_rate = fail_rate
        self.empty_rate = empty_rate
        self.tries = tries
        self.node_bytes = node_bytes
        self.delay = delay
        self.full_text_lookup = full_text_lookup
        self.trim_slack = trim_slack
        self.context_check = context_check
        # Strict (tests): a wrong context raises. Not strict (benchmarks): it is counted, and
        # bench.replay fails at the end with the count, after the figures are printed.
        self.context_strict = context_strict
        self.context_violations = 0
        self.calls = 0
        self.failed_calls = 0
        self.requests = 0
        self.tasks = 0
        self.attempts: Counter[tuple[int, int]] = Counter()
        self.builds: Counter[tuple[int, int]] = Counter()
        self.tries_by_node: dict[tuple[int, int], int] = {}
        self.usage = CallUsage(model=FAKE_MODEL)
        self.card_calls = 0  # write_cards invocations (one per chat and quiet period at most)
        self.card_usage = CallUsage(model=FAKE_MODEL)
        self._context: tuple[Sequence[str] | None, int] = (None, 0)  # the last one, its block's bytes

    async def summarize(
        self,
        context: Sequence[str],
        tasks: Sequence[CompactTask],
        *,
        still_current: StillCurrent | None = None,
    ) -> SummaryBatch:
        self.calls += 1
        # A call's context is most often the very tuple of the call before (one per pass,
        # kept between passes: memory/compaction/call_plan.py), and a tuple of strings cannot
        # change: checked and measured once, not at each of ~5,000 calls (100,000 messages).
        if not (isinstance(context, tuple) and context is self._context[0]):
            check_context(context)
            self._context = (context, utf8_len(context_block(context)))
        check_compactor_input((), tasks, self.full_text_lookup)
        if self.context_check is not None:
            wrong = await self.context_check(context, tasks)
            if wrong:
                self.context_violations += wrong
                if self.context_strict:
                    raise AssertionError(f"{wrong} task(s) got a context not of lines before their input")
        self.tasks += len(tasks)
        call_numbers: list[int] = []
        for task in tasks:
            self.attempts[(task.level, task.index)] += 1
            call_numbers.append(self.attempts[(task.level, task.index)])
        if self.delay:
            await asyncio.sleep(self.delay)
        call_seed = "|".join(
            f"{node_seed(t.level, t.index)}#{n}" for t, n in zip(tasks, call_numbers, strict=True)
        )
        if self.fail_rate and unit_draw(call_seed, "fail") < self.fail_rate:
            self.failed_calls += 1
            raise SummarizerError(f"fake summarizer: injected failure on call {self.calls}")
        # The too-long round is a second request, sent only while the row has not moved (as the
        # Anthropic summarizer asks before it); without it the first tries stand.
        retry = self.tries > 1 and self._wants_retry(tasks, call_numbers)
        if retry and still_current is not None:
            retry = await still_current()
        return self._answer(context, tasks, call_numbers, retry=retry)

    async def write_cards(self, tasks: Sequence[CardTask]) -> CardBatch:
        """Deterministic cards (:func:`fake_card`), priced as the request the Anthropic
        summarizer sends (system + one step per person), bytes / 4 a token."""
        self.card_calls += 1
        for task in tasks:
            for position, line in enumerate(task.lines):
                _check_bare(line, f"card input line {position}")
        cards: list[str | None] = [fake_card(task) for task in tasks]
        usage = CallUsage(model=FAKE_MODEL, calls=1 if tasks else 0)
        if tasks:
            prompt = utf8_len(card_system()) + utf8_len(cards_block(tasks))
            usage.input_tokens = _tokens(prompt)
            usage.output_tokens = _tokens(sum(utf8_len(card or "") + 16 for card in cards))
        self.card_usage.add(usage)
        return CardBatch(cards=cards, usage=usage)

    def _wants_retry(self, tasks: Sequence[CompactTask], call_numbers: Sequence[int]) -> bool:
        """Whether some first try is over the limit after trimming (an empty reply is not)."""
        for task, call_number in zip(tasks, call_numbers, strict=True):
            seed = f"{node_seed(task.level, task.index)}#{call_number}"
            if self.empty_rate and unit_draw(seed, "empty") < self.empty_rate:
                continue
            first = self._try(task, 1)
            if utf8_len(trim_overshoot(first, self.node_bytes, self.trim_slack) or first) > self.node_bytes:
                return True
        return False

    def _try(self, task: CompactTask, attempt: int) -> str:
        seed = node_seed(task.level, task.index)
        if task.kind == "compress":
            return fake_compress_try(
                task.author, task.text, seed, attempt, self.overshoot_rate, self.node_bytes
            )
        return fake_merge_try(task.left, task.right, seed, attempt, self.overshoot_rate, self.node_bytes)

    def _answer(
        self,
        context: Sequence[str],
        tasks: Sequence[CompactTask],
        call_numbers: Sequence[int],
        *,
        retry: bool = True,
    ) -> SummaryBatch:
        many = len(tasks) > 1
        lines: list[str | None] = []
        tries: list[int] = []
        first_tries: list[str] = []
        retried: list[tuple[int, str, str]] = []  # (step number, too-long line, second try)
        for step, (task, call_number) in enumerate(zip(tasks, call_numbers, strict=True), start=1):
            seed = f"{node_seed(task.level, task.index)}#{call_number}"
            if self.empty_rate and unit_draw(seed, "empty") < self.empty_rate:
                lines.append(None)
                tries.append(1)
                first_tries.append("")
                continue
            first = self._try(task, 1)
            first_tries.append(first)
            kept, used = trim_overshoot(first, self.node_bytes, self.trim_slack) or first, 1
            if utf8_len(kept) > self.node_bytes and self.tries > 1 and retry:
                second = self._try(task, 2)
                retried.append((step, first, second))
                used = 2
                kept = min((first, second), key=utf8_len)  # keep the shortest try
            lines.append(kept or None)
            tries.append(used)
            if kept:
                node = (task.level, task.index)
                self.builds[node] += 1
                self.tries_by_node[node] = used
        usage = self._usage(context, tasks, first_tries, retried, many)
        self.usage.add(usage)
        return SummaryBatch(lines=lines, tries=tries, usage=usage)

    def _usage(
        self,
        context: Sequence[str],
        tasks: Sequence[CompactTask],
        first_tries: Sequence[str],
        retried: Sequence[tuple[int, str, str]],
        many: bool,
    ) -> CallUsage:
        system = compact_system(self.node_bytes)
        # The prompt's bytes: system, context block and task block, a newline between each.
        known = isinstance(context, tuple) and context is self._context[0]
        context_bytes = self._context[1] if known else utf8_len(context_block(context))
        prompt_bytes = utf8_len(system) + 1 + context_bytes + 1 + utf8_len(task_block(tasks, self.node_bytes))
        numbers = list(range(1, len(tasks) + 1)) if many else None
        reply = _out_block(first_tries, numbers)
        input_bytes, output_bytes, requests = prompt_bytes, utf8_len(reply), 1
        if retried:
            # The retry round re-sends the whole conversation plus one "too long" note per step.
            notes = "\n\n".join(
                too_long_block(line, self.node_bytes, step if many else None) for step, line, _ in retried
            )
            second = _out_block([s for _, _, s in retried], [k for k, _, _ in retried] if many else None)
            input_bytes += input_bytes + output_bytes + utf8_len(notes)
            output_bytes += utf8_len(second)
            requests += 1
        self.requests += requests
        return CallUsage(
            model=FAKE_MODEL,
            input_tokens=_tokens(input_bytes),
            output_tokens=_tokens(output_bytes),
            calls=requests,
        )
