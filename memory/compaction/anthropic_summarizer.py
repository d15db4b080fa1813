"""The compactor's model calls through the Anthropic API (the Summarizer protocol).

One ``summarize`` call is one conversation (docs/design.md section 6):

1. system: ``compact_system(node_bytes)`` (instructions, the multi-step answer form and the
   ruler: the same on every call); one user turn with two text blocks: the ``<chat>`` context
   (cache-marked: system + context form the cached prefix, so consecutive nodes of a chat,
   which share their context, read it back at 0.1x) and the task block (the tasks only).
   No tools: our own constant system prompt caches across compactions. (Sharing the reply's tools +
   system instead would share one cache between them; not done.)
2. A line at most ``trim_slack`` bytes over ``node_bytes`` is cut at a word boundary here.
   Each line further over ``node_bytes`` is retried in the same conversation: the reply goes back as the
   assistant turn, then a user turn shows each over-long line cut at the limit ("| ← LIMIT").
   At most ``tries`` requests in all; the shortest try of each task is kept; a task the first
   reply leaves empty is a failure of that node (``None``), never retried here.

Before each request after the first, the caller's ``still_current`` is asked whether the row
moved since the call was planned (an erasure committed while the first request was out): if it
did, nothing more is sent and the lines so far are returned, to be thrown away by the caller.

Failures: any SDK failure of the first request raises :class:`SummarizerError` with a short
reason, after one log event (reason, model, counts; never text). The client is used with
``max_retries=0``: the compactor's RETRY loop retries the node, not the SDK. If a too-long
retry request fails, the lines already written are returned (the shortest, still over the
limit, as after the last try) so the tokens already spent reach the ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import structlog
from anthropic import AsyncAnthropic

from memory.claude import ClaudeError, create_message, message_text, usage_from_response, without_retries
from memory.compaction.card_prompts import TOKENS_PER_CARD, card_system, cards_block, parse_cards
from memory.compaction.prompts import (
    NODE_BYTES_DEFAULT,
    compact_system,
    context_block,
    parse_lines,
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

log = structlog.get_logger(__name__)

# A line is at most 512 bytes, and a first try may run ~40 over: ~140 tokens of English at
# ~4 bytes a token. 300 per step leaves room for scripts at ~2 bytes a token; the margin
# covers the <out n="K"> wrappers (~6 tokens a step) of a multi-step answer.
TOKENS_PER_STEP = 300
TOKENS_MARGIN = 100
DEFAULT_TRIES = 5


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


def max_tokens_for(steps: int) -> int:
    return TOKENS_PER_STEP * steps + TOKENS_MARGIN


def system_blocks(node_bytes: int) -> list[dict[str, Any]]:
    """The system prompt as sent (bench.cache_model accounts the same request)."""
    return [{"type": "text", "text": compact_system(node_bytes)}]


def first_turn(context: Sequence[str], tasks: Sequence[CompactTask], node_bytes: int) -> dict[str, Any]:
    """The user turn: the cached ``<chat>`` block, then the task block."""
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": context_block(context), "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": task_block(tasks, node_bytes)},
        ],
    }


def card_request(model: str, tasks: Sequence[CardTask]) -> dict[str, Any]:
    """The cards call as sent (bench.cache_model prices the same request). No cache mark: it is
    sent once a quiet period per chat, and its prefix is under every model's cache minimum."""
    return {
        "model": model,
        "max_tokens": TOKENS_PER_CARD * len(tasks) + 100,
        "system": [{"type": "text", "text": card_system()}],
        "messages": [{"role": "user", "content": cards_block(tasks)}],
    }


class AnthropicSummarizer:
    """:class:`~memory.compaction.summarizer.Summarizer` over an ``AsyncAnthropic`` client.

    ``client`` is the process's one client (memory.claude.make_client); this class derives a
    copy with ``max_retries=0`` and, when given, its own ``timeout`` (seconds per request),
    sharing the client's connection pool.
    """

    def __init__(
        self,
        client: AsyncAnthropic,
        *,
        model: str,
        node_bytes: int = NODE_BYTES_DEFAULT,
        tries: int = DEFAULT_TRIES,
        timeout: float | None = None,
        trim_slack: int = 0,
    ) -> None:
        if tries < 1:
            raise ValueError("tries must be at least 1")
        self.client = without_retries(client, timeout)
        self.model = model
        self.node_bytes = node_bytes
        self.tries = tries
        self.trim_slack = trim_slack  # see memory/compaction/prompts.py trim_overshoot; 0: always ask again

    async def summarize(
        self,
        context: Sequence[str],
        tasks: Sequence[CompactTask],
        *,
        still_current: StillCurrent | None = None,
    ) -> SummaryBatch:
        count = len(tasks)
        usage = CallUsage(model=self.model)
        if count == 0:
            return SummaryBatch(lines=[], tries=[], usage=usage)
        many = count > 1
        messages: list[dict[str, Any]] = [first_turn(context, tasks, self.node_bytes)]
        best: list[str | None] = [None] * count
        tries = [1] * count
        pending = list(range(count))  # the steps the next reply answers
        for attempt in range(1, self.tries + 1):
            if attempt > 1 and still_current is not None and not await still_current():
                break  # the row moved (an erasure?) while the last request was out: send no more
            try:
                reply = await self._request(messages, len(pending), usage)
            except ClaudeError as exc:
                log.warning(
                    "compact_call_failed",
                    model=self.model,
                    reason=exc.reason,
                    tasks=count,
                    request=attempt,
                )
                if attempt == 1:
                    raise SummarizerError(
                        exc.reason, rate_limited=exc.rate_limited, retry_after=exc.retry_after
                    ) from exc
                break  # keep the lines already written (see the module docstring)
            parsed = parse_lines(reply, count)
            over: list[int] = []
            for k in pending:
                line = parsed[k]
                if line is None:
                    continue  # first reply: the node fails; a retry: the earlier try stands
                line = trim_overshoot(line, self.node_bytes, self.trim_slack) or line
                tries[k] = attempt
                kept = best[k]
                if kept is None or _nbytes(line) < _nbytes(kept):
                    best[k] = line
                if _nbytes(line) > self.node_bytes:
                    over.append(k)
            if not over or attempt == self.tries:
                break
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": self._too_long_turn(parsed, over, many)},
            ]
            pending = over
        return SummaryBatch(lines=best, tries=tries, usage=usage)

    async def write_cards(self, tasks: Sequence[CardTask]) -> CardBatch:
        """The people cards of one chat in one request (memory/compaction/card_prompts.py); a card
        over CARD_BYTES is cut at a word boundary, never asked again."""
        usage = CallUsage(model=self.model)
        if not tasks:
            return CardBatch(cards=[], usage=usage)
        request = card_request(self.model, tasks)
        try:
            message = await create_message(self.client, **request)
        except ClaudeError as exc:
            log.warning("cards_call_failed", model=self.model, reason=exc.reason, cards=len(tasks))
            raise SummarizerError(
                exc.reason, rate_limited=exc.rate_limited, retry_after=exc.retry_after
            ) from exc
        usage.add(CallUsage(self.model, **asdict(usage_from_response(message)), calls=1))
        return CardBatch(cards=parse_cards(message_text(message), len(tasks)), usage=usage)

    def _too_long_turn(self, parsed: Sequence[str | None], over: Sequence[int], many: bool) -> str:
        notes = []
        for k in over:
            line = parsed[k]
            assert line is not None  # only answered steps are over the limit
            notes.append(too_long_block(line, self.node_bytes, k + 1 if many else None))
        return "\n\n".join(notes)

    async def _request(self, messages: list[dict[str, Any]], steps: int, usage: CallUsage) -> str:
        """One HTTP request; its usage is added to ``usage``; the reply's text is returned."""
        message = await create_message(
            self.client,
            model=self.model,
            max_tokens=max_tokens_for(steps),
            system=system_blocks(self.node_bytes),
            messages=messages,
        )
        counted = usage_from_response(message)
        usage.add(CallUsage(self.model, **asdict(counted), calls=1))
        return message_text(message)
