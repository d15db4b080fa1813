"""The requests the Anthropic summarizer would send for a call the fake summarizer answered.

The benchmarks never call a model: bench/cache_model.py prices every compactor call as the
requests :class:`~memory.compaction.anthropic_summarizer.AnthropicSummarizer` sends for it, built
here from the same pieces (its system blocks, first turn, task block and "too long" notes), with
the fake's own first tries (memory/fakes/size_model.py) as the model's first answers. Two
what-if layouts (the ``<chat>`` context in 4-line blocks, a byte budget growing with the level)
are built here too, since they change the same request. Benchmark support, shipped with the
fakes; nothing in the bot uses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory.compaction.anthropic_summarizer import card_request, first_turn, max_tokens_for, system_blocks
from memory.compaction.prompts import context_block, task_block, too_long_block
from memory.compaction.summarizer import CardBatch, CardTask, CompactTask, SummaryBatch
from memory.fakes.prompt_cache import estimate_tokens
from memory.fakes.size_model import fake_compress_try, fake_merge_try, node_seed
from memory.text.lines import cut_at_bytes


def _out_text(lines: Sequence[str], steps: Sequence[int] | None) -> str:
    """The reply a model writes: the line, or one ``<out n="K">`` line per step."""
    if steps is None:
        return "\n".join(lines)
    return "\n".join(f'<out n="{k}">{line}</out>' for k, line in zip(steps, lines, strict=True))


def _first_try(task: CompactTask, overshoot_rate: float, node_bytes: int) -> str:
    seed = node_seed(task.level, task.index)
    if task.kind == "compress":
        return fake_compress_try(task.author, task.text, seed, 1, overshoot_rate, node_bytes)
    return fake_merge_try(task.left, task.right, seed, 1, overshoot_rate, node_bytes)


CONTEXT_BLOCK_LINES = 4
BUDGET_STEP = 128


def level_budget(level: int, node_bytes: int) -> int:
    """What-if: the bytes a line of ``level`` is asked for, growing with the stretch it covers:
    128 for a message, then +128 a level, up to NODE_BYTES (512 from level 3, 8 messages)."""
    return min(node_bytes, BUDGET_STEP * (level + 1))


def context_blocks(context: Sequence[str], tasks: Sequence[CompactTask], node_bytes: int) -> dict[str, Any]:
    """What-if layout of the compactor's user turn: the same ``<chat>`` text cut into blocks of
    4 lines, the mark on the last whole block (as the reply row is), then the task block. The
    context of consecutive calls starts at the same 16 KB grid line, so a later call finds the
    earlier call's mark within the 20-block lookback and reads that prefix."""
    text = context_block(context)
    lines = text.split("\n")
    blocks: list[dict[str, Any]] = []
    for start in range(0, len(lines), CONTEXT_BLOCK_LINES):
        chunk = lines[start : start + CONTEXT_BLOCK_LINES]
        last = start + CONTEXT_BLOCK_LINES >= len(lines)
        blocks.append({"type": "text", "text": "\n".join(chunk) + ("" if last else "\n")})
    whole = [k for k in range(len(blocks)) if (k + 1) * CONTEXT_BLOCK_LINES <= len(lines) - 1]
    if whole:
        blocks[whole[-1]] = {**blocks[whole[-1]], "cache_control": {"type": "ephemeral"}}
    blocks.append({"type": "text", "text": task_block(tasks, node_bytes)})
    return {"role": "user", "content": blocks}


def compaction_requests(
    model: str,
    context: Sequence[str],
    tasks: Sequence[CompactTask],
    batch: SummaryBatch,
    *,
    node_bytes: int,
    overshoot_rate: float,
    blocked_context: bool = False,
    byte_budget: bool = False,
) -> list[tuple[dict[str, Any], int]]:
    """The requests :class:`~memory.compaction.anthropic_summarizer.AnthropicSummarizer` sends for one
    ``summarize`` call whose answer was ``batch``, each with its output tokens: the first
    request (system + cache-marked ``<chat>`` context + task block), then, when a line came
    back too long, the retry in the same conversation (the whole conversation again plus
    the "too long" notes)."""
    many = len(tasks) > 1
    steps = list(range(1, len(tasks) + 1)) if many else None
    firsts = [_first_try(task, overshoot_rate, node_bytes) for task in tasks]
    if byte_budget:
        firsts = [
            cut_at_bytes(line, level_budget(t.level, node_bytes))
            for line, t in zip(firsts, tasks, strict=True)
        ]
    reply = _out_text(firsts, steps)
    opening = context_blocks if blocked_context else first_turn
    messages: list[dict[str, Any]] = [opening(context, tasks, node_bytes)]
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens_for(len(tasks)),
        "system": system_blocks(node_bytes),
        "messages": messages,
    }
    out = [(body, estimate_tokens(reply))]
    retried = [k for k, tries in enumerate(batch.tries) if tries > 1]
    if retried:
        notes = "\n\n".join(too_long_block(firsts[k], node_bytes, k + 1 if many else None) for k in retried)
        seconds = [batch.lines[k] or "" for k in retried]
        again = {
            **body,
            "max_tokens": max_tokens_for(len(retried)),
            "messages": [
                *messages,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": notes},
            ],
        }
        out.append((again, estimate_tokens(_out_text(seconds, [k + 1 for k in retried] if many else None))))
    return out


def cards_request(model: str, tasks: Sequence[CardTask], batch: CardBatch) -> tuple[dict[str, Any], int]:
    """The people cards' request as the Anthropic summarizer sends it, and the output tokens
    of the answer that carries ``batch``'s cards."""
    answer = _out_text([card or "" for card in batch.cards], list(range(1, len(tasks) + 1)))
    return card_request(model, tasks), estimate_tokens(answer)
