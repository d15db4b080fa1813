"""The fake's deterministic compactor: recognise a compaction call, answer with sized lines.

A request is a compaction call when its system prompt is ``memory.prompts.COMPACT_SYSTEM`` or a
user turn holds a task head ("Compress this message ..." / "Merge these two adjacent lines ...").
The first user turn that holds a task block names the tasks (one, or several in the
``<out n="K">`` form); when the last user turn is a "Too long" follow-up, the answer is the
retry for the named step(s), always within the limit.

Line sizes follow the size model of DESIGN.md section 12 (see ``_fake_line``); the only entry
point for them is ``compactor_line``, so it can be pointed at ``memory.fake_summarizer`` later.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memory.prompts import (
    COMPACT_SYSTEM,
    COMPRESS_HEAD,
    MANY_HEAD,
    MERGE_HEAD,
    NODE_BYTES_DEFAULT,
    TOO_LONG,
    TOO_LONG_MANY,
    cut_at_bytes,
    flatten,
)

OVERSHOOT_MIN_BYTES = 5
OVERSHOOT_MAX_BYTES = 40
COMPRESS_FLOOR_BYTES = 60
JITTER = 0.10  # +-10%


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


def _unit(seed: int, salt: str) -> float:
    """A deterministic number in [0, 1) from a seed and a purpose."""
    digest = hashlib.sha256(f"{seed}:{salt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def input_seed(kind: str, input_text: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{kind}\n{input_text}".encode()).digest()[:8], "big")


def _fragments(kind: str, input_text: str) -> list[str]:
    """The "Name: words" pieces of the input, each of which the line keeps a part of."""
    if kind == "compress":
        return [flatten(input_text).strip()]
    pieces: list[str] = []
    for line in input_text.split("\n"):
        pieces += [piece.strip() for piece in line.split("; ") if piece.strip()]
    return pieces


def _take_words(fragment: str, budget: int) -> str:
    """The fragment's leading words within ``budget`` bytes (always its first word, e.g. a name)."""
    words = fragment.split()
    taken = words[:1]
    for word in words[1:]:
        if _nbytes(" ".join([*taken, word])) > budget:
            break
        taken.append(word)
    return " ".join(taken)


def _extract(kind: str, input_text: str, target: int) -> str:
    """An extractive line of exactly ``target`` bytes built from the input's fragments."""
    fragments = _fragments(kind, input_text) or ["x"]
    total = sum(_nbytes(fragment) for fragment in fragments) or 1
    line = "; ".join(_take_words(fragment, int(target * _nbytes(fragment) / total)) for fragment in fragments)
    filler = " ".join(fragments).split() or ["x"]
    index = 0
    while _nbytes(line) < target:
        line += " " + filler[index % len(filler)]
        index += 1
    line = cut_at_bytes(line, target).rstrip()
    return line + "." * (target - _nbytes(line))


def _fake_line(
    kind: str, input_text: str, seed: int, *, limit: int = NODE_BYTES_DEFAULT, overshoot: bool = False
) -> str:
    """The size model (DESIGN.md section 12), with ``limit`` for 512:

    compress: min(limit, max(60, 0.5 x input bytes) x jitter); merge: min(limit, 0.8 x (a + b) x
    jitter), where jitter is a deterministic factor in [0.9, 1.1] from ``seed``. An overshooting
    first try is limit + 5..40 bytes instead. The text is extractive (keeps "Name: words").
    """
    if overshoot:
        span = OVERSHOOT_MAX_BYTES - OVERSHOOT_MIN_BYTES + 1
        return _extract(kind, input_text, limit + OVERSHOOT_MIN_BYTES + int(_unit(seed, "over") * span))
    jitter = 1.0 - JITTER + 2 * JITTER * _unit(seed, "jitter")
    if kind == "compress":
        base = max(COMPRESS_FLOOR_BYTES, 0.5 * _nbytes(input_text))
    else:
        left, _, right = input_text.partition("\n")
        base = 0.8 * (_nbytes(left) + _nbytes(right))
    return _extract(kind, input_text, max(1, min(limit, round(base * jitter))))


def compactor_line(kind: str, input_text: str, seed: int, *, limit: int, overshoot: bool) -> str:
    """THE hook for line sizes: point this at memory.fake_summarizer when it exists."""
    return _fake_line(kind, input_text, seed, limit=limit, overshoot=overshoot)


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


def is_compaction_request(body: Mapping[str, Any]) -> bool:
    if _system_text(body).strip() == COMPACT_SYSTEM.strip():
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


class Compactor:
    """Answers compaction calls deterministically; ``overshoot_rate`` in [0, 1] applies to first tries."""

    def __init__(self, overshoot_rate: float = 0.0) -> None:
        self.overshoot_rate = overshoot_rate

    def _line(self, task: ParsedTask, first_try: bool) -> str:
        seed = input_seed(task.kind, task.input_text)
        overshoot = first_try and _unit(seed, "overshoot?") < self.overshoot_rate
        return compactor_line(task.kind, task.input_text, seed, limit=task.limit, overshoot=overshoot)

    def reply_text(self, body: Mapping[str, Any]) -> str:
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
