"""The fake compactor model's size model and text: pure functions of a task's input and seed.

Shared by memory/fakes/summarizer.py (in process), tests/fakes/anthropic_compactor.py (the HTTP
fake of the Anthropic API) and the benchmarks, so every fake follows the same model.

The size model (docs/design.md section 12) decides how many merges are free, so every benchmark
figure of calls per message depends on it; benchmarks print :func:`size_model_description`
next to their figures. With ``in`` the message as the prompt shows it (``"{author}: {text}"``),
``a`` and ``b`` the two child lines, sizes in UTF-8 bytes, and ``j`` a jitter factor in
[0.90, 1.10] drawn from a SHA-256 of the seed (the node address ``"{level}:{index}"``):

- compress: ``min(512, round(j * max(60, 0.5 * in)))``
- merge:    ``min(512, round(j * 0.8 * (a + b)))``
- first try: with probability ``overshoot_rate`` (drawn from the seed) it is 5..40 bytes over
  512, when the input is long enough to copy that much (always so for real tasks: the
  compactor only calls the model for inputs over 512 bytes); the second try meets the limit.
  :data:`MEASURED_OVERSHOOT_RATE` (10%, Haiku in a 30-job bake-off reported with the OptChat
  spec; docs/design.md section 6) is the realistic rate for benchmarks; the FakeSummarizer
  defaults to 0 so unit tests see one try unless they ask for more.

The text is extractive and credits authors, so lines read plausibly and names survive:
compress keeps ``"Author: "`` and the message's first words; merge keeps a prefix of each child
line, in proportion to its size, joined with ``" ; "``. Cuts fall on a word boundary when that
costs at most 12 bytes (else on a character boundary), never inside a UTF-8 character. A line
is one physical line (whitespace runs become one space) and never longer than its target.
"""

from __future__ import annotations

import hashlib

from memory.compaction.prompts import NODE_BYTES_DEFAULT
from memory.text.lines import cut_at_bytes

COMPRESS_RATIO = 0.5
COMPRESS_FLOOR = 60
MERGE_RATIO = 0.8
JITTER = 0.10  # +-10%
OVERSHOOT_MIN, OVERSHOOT_MAX = 5, 40
MEASURED_OVERSHOOT_RATE = 0.10
MERGE_JOIN = " ; "
# Back off to a word boundary only when it costs at most this many bytes (about two words);
# a longer cut would make sizes drift below the model (one 200-byte URL would halve a line).
WORD_SLACK = 12
Seed = str | int


def size_model_description(node_bytes: int = NODE_BYTES_DEFAULT, overshoot_rate: float | None = None) -> str:
    """The size model in one paragraph, for benchmarks to print with their figures."""
    rate = "a settable rate" if overshoot_rate is None else f"rate {overshoot_rate:.0%}"
    return (
        f"fake summarizer size model: compress = min({node_bytes}, max({COMPRESS_FLOOR}, "
        f"{COMPRESS_RATIO} x input bytes)), merge = min({node_bytes}, {MERGE_RATIO} x (a + b)), "
        f"each x a deterministic jitter in [{1 - JITTER:.2f}, {1 + JITTER:.2f}] seeded by the node "
        f"address; first try {OVERSHOOT_MIN}-{OVERSHOOT_MAX} bytes over {node_bytes} at {rate} "
        "(when the input allows), second try fits; extractive text, word-boundary cuts"
    )


def node_seed(level: int, index: int) -> str:
    """The seed of node ``(level, index)``: every draw about a node derives from it."""
    return f"{level}:{index}"


def unit_draw(seed: Seed, salt: str) -> float:
    """A uniform draw in [0, 1) from the seed, the same in every process (unlike ``hash``)."""
    digest = hashlib.sha256(f"{salt}|{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def jitter(seed: Seed) -> float:
    return 1 - JITTER + 2 * JITTER * unit_draw(seed, "jitter")


def compress_size(input_bytes: int, seed: Seed, limit: int = NODE_BYTES_DEFAULT) -> int:
    return min(limit, round(jitter(seed) * max(COMPRESS_FLOOR, COMPRESS_RATIO * input_bytes)))


def merge_size(left_bytes: int, right_bytes: int, seed: Seed, limit: int = NODE_BYTES_DEFAULT) -> int:
    return min(limit, round(jitter(seed) * MERGE_RATIO * (left_bytes + right_bytes)))


def first_try_overshoot(seed: Seed, rate: float) -> int:
    """How many bytes the first try goes over the limit: 0, or 5..40 with probability ``rate``."""
    if unit_draw(seed, "overshoot") >= rate:
        return 0
    span = OVERSHOOT_MAX - OVERSHOOT_MIN + 1
    return OVERSHOOT_MIN + int(unit_draw(seed, "overshoot-bytes") * span)


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


def one_line(text: str) -> str:
    """Whitespace runs (newlines included) as one space: a line is one physical line."""
    return " ".join(text.split())


def trim_to_bytes(text: str, limit: int) -> str:
    """At most ``limit`` bytes of ``text``, cut at a word boundary when that is cheap."""
    if _nbytes(text) <= limit:
        return text
    cut = cut_at_bytes(text, max(0, limit))
    if text[len(cut) : len(cut) + 1].isspace():
        return cut.rstrip().rstrip(" ;")
    space = cut.rfind(" ")
    if space > 0 and _nbytes(cut) - _nbytes(cut[:space]) <= WORD_SLACK:
        return cut[:space].rstrip(" ;")
    return cut


def compress_material(author: str, text: str) -> str:
    words = one_line(text)
    return f"{author}: {words}" if author else words


def merge_material(left: str, right: str) -> str:
    parts = [part for part in (one_line(left), one_line(right)) if part]
    return MERGE_JOIN.join(parts)


def fake_compress_line(author: str, text: str, seed: Seed, limit: int = NODE_BYTES_DEFAULT) -> str:
    """The line for one message: ``"Author: "`` and its first words, at the modelled size."""
    target = compress_size(_nbytes(f"{author}: {text}"), seed, limit)
    return trim_to_bytes(compress_material(author, text), target)


def fake_merge_line(left: str, right: str, seed: Seed, limit: int = NODE_BYTES_DEFAULT) -> str:
    """The line for two children: a prefix of each, in proportion to its size, joined by `` ; ``."""
    left_line, right_line = one_line(left), one_line(right)
    left_bytes, right_bytes = _nbytes(left), _nbytes(right)
    target = merge_size(left_bytes, right_bytes, seed, limit)
    if not left_line or not right_line:
        return trim_to_bytes(left_line or right_line, target)
    body = max(0, target - _nbytes(MERGE_JOIN))
    left_budget = round(body * left_bytes / (left_bytes + right_bytes))
    parts = [trim_to_bytes(left_line, left_budget), trim_to_bytes(right_line, body - left_budget)]
    return MERGE_JOIN.join(part for part in parts if part)


def _overlong(material: str, seed: Seed, rate: float, limit: int) -> str | None:
    """The too-long first try: the input copied up to 5..40 bytes over the limit, or None."""
    over = first_try_overshoot(seed, rate)
    if not over or _nbytes(material) <= limit:
        return None
    line = cut_at_bytes(material, limit + over).rstrip()
    return line if _nbytes(line) > limit else None


def _first_or_fitting(material: str, fitting: str, seed: Seed, attempt: int, rate: float, limit: int) -> str:
    """Try ``attempt`` (1-based): the first may be the too-long copy of ``material``, later
    ones (and a first that does not overshoot) are the ``fitting`` line."""
    overlong = _overlong(material, seed, rate, limit) if attempt == 1 else None
    return fitting if overlong is None else overlong


def fake_compress_try(
    author: str, text: str, seed: Seed, attempt: int, overshoot_rate: float, limit: int = NODE_BYTES_DEFAULT
) -> str:
    """Try ``attempt`` (1-based) of a compress step: the first may overshoot, later ones fit."""
    fitting = fake_compress_line(author, text, seed, limit)
    return _first_or_fitting(compress_material(author, text), fitting, seed, attempt, overshoot_rate, limit)


def fake_merge_try(
    left: str, right: str, seed: Seed, attempt: int, overshoot_rate: float, limit: int = NODE_BYTES_DEFAULT
) -> str:
    """Try ``attempt`` (1-based) of a merge step: the first may overshoot, later ones fit."""
    fitting = fake_merge_line(left, right, seed, limit)
    return _first_or_fitting(merge_material(left, right), fitting, seed, attempt, overshoot_rate, limit)
