"""What the benchmarks price, and at which models: the reply request of a turn and its meter.

A reply turn's request is built exactly as the bot builds it (bot/core/turn.py
``build_request``: tools, system, the row in 4-line blocks, the raw tail in blocks cut at
message indexes k*8, the per-turn note, 4 marks) from the engine's own ``prompt_view``, and
accounted on the prompt-cache simulation (bench/cache_model.py) once per mark lifetime. The
replay's turns (bench/turns.py), the rolling-summary baseline (bench/baselines.py) and the scale
chat's prompt latency (bench/scale_measure.py) share it.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from bench.cache_model import CacheMeter, MeterFigures, corpus_seconds, with_ttl
from bot.core.cache_policy import TurnGaps
from bot.core.prompts import DEFAULT_PERSONA_FILE, MEMORY_INSTRUCTIONS, NAME_PLACEHOLDER
from bot.core.tools import TOOLS
from bot.core.turn import Trigger, TurnNote, build_request
from memory import ImportedMessage, PromptView
from memory.clock import SimulatedClock
from memory.pricing import PriceTable

REPLY_MODEL = "claude-sonnet-5-5"
COMPACT_MODELS = ("claude-haiku-4-5", "claude-haiku-5-5")
# The bot's defaults (bot/settings.py), typed in because bench/ reads no bot settings
# (tests/structure/test_layers.py); tests/bench/test_meters.py checks they still agree.
DEFAULT_COMPACT_MODEL = "claude-haiku-5-5"
DEFAULT_BOT_NAME = "Eva"
REPLY_OUTPUT_TOKENS = 150  # a group-chat answer of a few sentences
REPLY_MAX_TOKENS = 1024
# The bot's policy (bot/core/cache_policy.py): each mark's lifetime chosen from the chat's recent
# gaps between turns. "5m" and "1h" put every mark at that lifetime.
AUTO = "auto"


def compact_model() -> str:
    """COMPACT_MODEL as the bot would read it: the environment, else the settings' default."""
    return os.environ.get("COMPACT_MODEL") or DEFAULT_COMPACT_MODEL


def reply_system_prompt() -> str:
    """The system prompt of a bot on the default settings (the shipped persona, BOT_NAME Eva),
    composed as bot/core/prompts.py ``system_prompt`` composes it."""
    persona = DEFAULT_PERSONA_FILE.read_text(encoding="utf-8").strip()
    return (persona + "\n\n" + MEMORY_INSTRUCTIONS).replace(NAME_PLACEHOLDER, DEFAULT_BOT_NAME)


class ReplyMeter:
    """Builds the reply request for a turn and accounts it on one cache per mark lifetime."""

    def __init__(
        self,
        clock: SimulatedClock,
        ttls: tuple[str, ...] = ("5m",),
        *,
        model: str = REPLY_MODEL,
        output_tokens: int = REPLY_OUTPUT_TOKENS,
        prices: PriceTable | None = None,
    ) -> None:
        self.clock, self.model, self.output_tokens = clock, model, output_tokens
        self.system = reply_system_prompt()
        self.tools: list[dict[str, Any]] = TOOLS
        self.meters = {ttl: CacheMeter(model, corpus_seconds(clock), prices) for ttl in ttls}
        self.gaps = TurnGaps()  # the bot's own per-chat lifetime choice, for the "auto" meter
        self.turns = 0
        self.largest_prompt_bytes = 0

    def account(self, view: PromptView, index: int, record: ImportedMessage) -> None:
        note = TurnNote(self.clock.now(), view.timezone, (Trigger(record.author_name, 0, index),))
        request = functools.partial(
            build_request,
            model=self.model,
            max_tokens=REPLY_MAX_TOKENS,
            system=self.system,
            tools=self.tools,
            view=view,
            note=note,
        )
        body = request()
        self.turns += 1
        self.largest_prompt_bytes = max(self.largest_prompt_bytes, request_bytes(body))
        for ttl, meter in self.meters.items():
            if ttl == AUTO:
                chosen = request(lifetimes=self.gaps.lifetimes(0, self.clock.now()))
                meter.account(chosen, self.output_tokens)
            else:
                meter.account(with_ttl(body, ttl), self.output_tokens)

    def figures(self) -> dict[str, MeterFigures]:
        return {ttl: meter.totals for ttl, meter in self.meters.items()}


def request_bytes(body: dict[str, Any]) -> int:
    """UTF-8 bytes of the prompt's text blocks (tools as their JSON size is left out: constant)."""
    total = sum(len(b["text"].encode()) for b in body.get("system") or [])
    for message in body["messages"]:
        content = message["content"]
        blocks = [content] if isinstance(content, str) else [b.get("text", "") for b in content]
        total += sum(len(text.encode()) for text in blocks)
    return total
