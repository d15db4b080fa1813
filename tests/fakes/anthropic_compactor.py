"""The fake's deterministic compactor: recognise a compaction call, answer with sized lines.

A request is a compaction call when its system prompt is ``memory.compaction.prompts.compact_system`` or a
user turn holds a task head ("Compress this message ..." / "Merge these two adjacent lines ...").
The first user turn that holds a task block names the tasks (one, or several in the
``<out n="K">`` form); when the last user turn is a "Too long" follow-up, the answer is the
retry for the named step(s), always within the limit.

Line sizes follow the one size model of docs/design.md section 12, ``memory.fakes.size_model``'s; the
only entry point for them is ``compactor_line``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memory.compaction.card_prompts import CARD_BYTES, CARD_STEP, CARD_SYSTEM, fit_card
from memory.compaction.prompts import (
    COMPRESS_HEAD,
    MANY_HEAD,
    MERGE_HEAD,
    SYSTEM_BASE,
    TOO_LONG,
    TOO_LONG_MANY,
)
from memory.fakes.size_model import (
    compress_size,
    fake_compress_try,
    fake_merge_try,
    first_try_overshoot,
    merge_size,
)
from memory.text.lines import cut_at_bytes


def _template_regex(template: str) -> str:
    """A regex for a prompt template: literal text escaped, each ``{name}`` a number group."""
    parts = re.split(r"\{(\w+)\}", template)
    return "".join(re.escape(part) if index % 2 == 0 else r"(\d+)" for index, part in enumerate(parts))


_TASK = re.compile(
    r"(?:Step (\d+)\. )?(?:"
    + _template_regex(COMPRESS_HEAD)
    + "|"
    + _template_regex(MERGE_HEAD)
    + r")\n<input>\n(.*?)\n</input>",
    re.DOTALL,
)
_MANY = re.compile(_template_regex(MANY_HEAD))
_TOO_LONG = re.compile(_template_regex(TOO_LONG))
_TOO_LONG_MANY = re.compile(_template_regex(TOO_LONG_MANY))


@dataclass(frozen=True, slots=True)
class ParsedTask:
    kind: str  # "compress" | "merge"
    input_text: str  # compress: "Author: text"; merge: "left\nright"
    limit: int


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


def input_seed(kind: str, input_text: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{kind}\n{input_text}".encode()).digest()[:8], "big")


def _pad(line: str, input_text: str, target: int) -> str:
    """``line`` brought to exactly ``target`` bytes: the input's words again, then dots.

    The in-process fake writes at most the modelled size (its text is cut from the input); the
    HTTP fake always writes exactly it, so a short input still gets the 60-byte floor and an
    overshooting first try is always 5..40 bytes over, whatever the input's length.
    """
    filler = input_text.split() or ["x"]
    index = 0
    while _nbytes(line) < target:
        word = filler[index % len(filler)]
        line = f"{line} {word}" if line else word
        index += 1
    line = cut_at_bytes(line, target).rstrip()
    return line + "." * (target - _nbytes(line))


def compactor_line(
    kind: str, input_text: str, seed: int, *, limit: int, attempt: int, overshoot_rate: float
) -> str:
    """THE hook for line sizes: memory.fakes.size_model's size model (docs/design.md section 12).

    Sizes and text come from ``fake_compress_try`` / ``fake_merge_try`` (compress: min(limit,
    max(60, 0.5 x input bytes) x jitter); merge: min(limit, 0.8 x (a + b) x jitter); jitter in
    [0.9, 1.1]; the first try 5..40 bytes over the limit with probability ``overshoot_rate``, drawn
    by ``first_try_overshoot``). ``attempt`` 2 and later always fit. The seed is a hash of the
    input, as the HTTP fake never sees a node address, so the two fakes draw different jitters
    from the same distribution. The line is then padded to the modelled size (see ``_pad``): for
    inputs over 512 bytes, the only ones a compactor sends, that adds at most the 12 bytes a
    word-boundary cut took off.
    """
    over = first_try_overshoot(seed, overshoot_rate) if attempt == 1 else 0
    if kind == "compress":
        author, separator, text = input_text.partition(": ")
        if not separator:
            author, text = "", input_text
        line = fake_compress_try(author, text, seed, attempt, overshoot_rate, limit)
        size = compress_size(_nbytes(input_text), seed, limit)
    else:
        left, _, right = input_text.partition("\n")
        line = fake_merge_try(left, right, seed, attempt, overshoot_rate, limit)
        size = merge_size(_nbytes(left), _nbytes(right), seed, limit)
    return _pad(line, input_text, limit + over if over else size)


def content_text(content: Any) -> str:
    """The text of a message's content (a string, or its text blocks joined by newlines)."""
    if isinstance(content, str):
        return content
    parts = [block.get("text", "") for block in content or () if isinstance(block, Mapping)]
    return "\n".join(part for part in parts if isinstance(part, str))


def _system_text(body: Mapping[str, Any]) -> str:
    return content_text(body.get("system") or "")


def parse_tasks(text: str) -> tuple[list[ParsedTask], bool]:
    """The tasks of a task block, and whether it asked for the multi-step ``<out>`` form."""
    task_part = text[text.rfind("</chat>") :] if "</chat>" in text else text
    tasks = []
    for match in _TASK.finditer(task_part):
        compress_limit, merge_limit, body = match.group(2), match.group(3), match.group(4)
        kind = "compress" if compress_limit is not None else "merge"
        tasks.append(ParsedTask(kind, body, int(compress_limit or merge_limit)))
    return tasks, bool(_MANY.search(task_part))


def _user_texts(body: Mapping[str, Any]) -> list[str]:
    return [content_text(m.get("content")) for m in body.get("messages") or () if m.get("role") == "user"]


_CARD_SYSTEM_HEAD = CARD_SYSTEM.split("\n", 1)[0]
_CARD_STEP = re.compile(
    re.escape(CARD_STEP).replace(r"\{k\}", r"(\d+)").replace(r"\{name\}", r".*?")
    + r"\n<input>\n(.*?)\n?</input>",
    re.DOTALL,
)


def is_cards_request(body: Mapping[str, Any]) -> bool:
    """A people-cards call (memory/compaction/card_prompts.py): its system prompt is the cards'."""
    return _system_text(body).startswith(_CARD_SYSTEM_HEAD)


def cards_reply(body: Mapping[str, Any]) -> str:
    """One card per step, made of that step's lines' own words (nothing else reaches it), half
    their size, at least 60 bytes, at most CARD_BYTES, as ``<out n="K">``."""
    text = "\n".join(_user_texts(body))
    out = []
    for match in _CARD_STEP.finditer(text):
        source = " ".join(match.group(2).split("\n")).strip()
        if source:
            size = min(CARD_BYTES, max(60, _nbytes(source) // 2))
            out.append(f'<out n="{match.group(1)}">{fit_card(source, size)}</out>')
    return "\n".join(out)


def is_compaction_request(body: Mapping[str, Any]) -> bool:
    if _system_text(body).strip().startswith(SYSTEM_BASE.strip()):  # compact_system(any limit)
        return True
    return any(parse_tasks(text)[0] for text in _user_texts(body))


def _retry_steps(last_user_text: str, many: bool) -> list[int] | None:
    """Steps named by a "Too long" follow-up (1 for the single form); None if it is not one."""
    steps = [int(match.group(1)) for match in _TOO_LONG_MANY.finditer(last_user_text)]
    if steps:
        return steps
    if _TOO_LONG.search(last_user_text):
        return [1]
    return None


def first_try_tasks(body: Mapping[str, Any]) -> list[ParsedTask]:
    """The tasks a compaction call asks for the first time (none for a "Too long" retry, which
    asks again for steps of an earlier call): one per node built, so a test counts builds."""
    texts = _user_texts(body)
    for text in texts:
        tasks, many = parse_tasks(text)
        if tasks:
            return tasks if len(texts) == 1 or _retry_steps(texts[-1], many) is None else []
    return []


class Compactor:
    """Answers compaction calls deterministically; ``overshoot_rate`` in [0, 1] applies to first tries."""

    def __init__(self, overshoot_rate: float = 0.0) -> None:
        self.overshoot_rate = overshoot_rate

    def _line(self, task: ParsedTask, first_try: bool) -> str:
        seed = input_seed(task.kind, task.input_text)
        return compactor_line(
            task.kind,
            task.input_text,
            seed,
            limit=task.limit,
            attempt=1 if first_try else 2,
            overshoot_rate=self.overshoot_rate,
        )

    def reply_text(self, body: Mapping[str, Any]) -> str:
        if is_cards_request(body):
            return cards_reply(body)
        texts = _user_texts(body)
        tasks: list[ParsedTask] = []
        many = False
        for text in texts:
            tasks, many = parse_tasks(text)
            if tasks:
                break
        if not tasks:
            return "I need a task block to write a line."  # a compactor system prompt without a task
        retry = _retry_steps(texts[-1], many) if len(texts) > 1 else None
        if retry is None:
            lines = [self._line(task, first_try=True) for task in tasks]
            return _format(lines, range(1, len(tasks) + 1), many)
        steps = [step for step in retry if 1 <= step <= len(tasks)]
        return _format([self._line(tasks[step - 1], first_try=False) for step in steps], steps, many)


def _format(lines: Sequence[str], steps: Sequence[int], many: bool) -> str:
    if not many:
        return lines[0]
    return "\n".join(f'<out n="{step}">{line}</out>' for step, line in zip(steps, lines, strict=True))


class OnePlainLine:
    """A model that ignores the multi-task format: whatever a compaction call asks, it answers
    with one plain line (independent of the deterministic compactor above). For a one-task call
    that is a right answer; for a four-task call it answers none of the steps."""

    LINE = "People talked about their plans for the week and agreed to meet again."

    def __init__(self) -> None:
        self.steps_asked: list[int] = []

    def reply_text(self, body: Mapping[str, Any]) -> str:
        for text in _user_texts(body):
            tasks, _ = parse_tasks(text)
            if tasks:
                self.steps_asked.append(len(tasks))
                break
        return self.LINE
