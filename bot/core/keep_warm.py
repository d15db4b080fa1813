"""Keep-warm: a quiet chat's reply prompt kept in the prompt cache between a group's bursts (pure).

A friend group talks in bursts hours apart. Measured on the friend-group timeline
(``python -m bench.reply_cost``), turns after a gap of over an hour were 57% of the turns and
81% of the reply bill, nearly all of it cache writes: every burst wrote the whole prefix again.
A 1-hour entry that is read lives another hour, and a read costs 0.05-0.1x the input price
against 2x for writing it again. So after a turn whose marks live an hour
(bot/core/cache_policy.py chooses them knowing the pings), the bot sends the chat's prompt again
every PING_EVERY while the chat is quiet, up to KEEP_WARM_HOURS after the turn, asking for one
token of output. A ping is built from the chat's memory as it is then (``prompt_view``), never
from a kept copy of the last prompt: words erased since are not sent, and a row swapped in by
the quiet half hour is written by the ping at 1 hour, so the next turn reads it.

A ping carries the same tools, system prompt, cards, row and tail blocks, with the same marks,
as the next turn will: only its last block differs (a note of our own, after the tail mark, and
unmarked, so nothing of it is written).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.core.cache_policy import PING_EVERY, MarkLifetimes
from bot.core.turn import Block, marked, marked_prefix, text_block
from memory import PromptView

# The one output token a ping asks for; the answer is thrown away.
PING_MAX_TOKENS = 1
PING_NOTE = (
    "</tail>\n<turn>\nNobody has asked you anything: this request only keeps the conversation in "
    "the prompt cache. Answer with one word.\n</turn>"
)


def next_ping(turn_at: float, sent_at: float, kept_warm_for: float) -> float | None:
    """When the chat whose last turn was at ``turn_at`` and whose last request (turn or ping)
    was at ``sent_at`` gets its next ping (seconds), or None: no more pings for that turn."""
    at = sent_at + PING_EVERY
    return at if at - turn_at <= kept_warm_for else None


def ping_times(turn_at: float, sent_at: float, until: float, kept_warm_for: float) -> list[float]:
    """Every ping due before ``until`` (exclusive), in order: the bot's schedule when each
    ping goes out on time (the benchmarks price them at these moments)."""
    times: list[float] = []
    at = next_ping(turn_at, sent_at, kept_warm_for)
    while at is not None and at < until:
        times.append(at)
        at = next_ping(turn_at, at, kept_warm_for)
    return times


def ping_request(
    *,
    model: str,
    system: str,
    tools: Sequence[Block],
    view: PromptView,
    lifetimes: MarkLifetimes,
) -> dict[str, Any]:
    """The Messages API body of one ping (pure): the turn's prefix with its marks, then the
    ping note, unmarked (the same blocks as bot/core/turn.py ``build_request``)."""
    content = marked_prefix(view, lifetimes)
    content.append(text_block(PING_NOTE))
    return {
        "model": model,
        "max_tokens": PING_MAX_TOKENS,
        "system": [marked(text_block(system), lifetimes.system)],
        "tools": [dict(tool) for tool in tools],
        "messages": [{"role": "user", "content": content}],
    }
