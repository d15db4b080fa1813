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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.cache_model import CacheMeter, MeterFigures, corpus_seconds, with_ttl
from bench.reply_causes import CauseLedger, TurnShape, turn_cause
from bot.core.cache_policy import ALL_FIVE_MINUTES, MarkLifetimes, TurnGaps
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
TOOL_USE_OUTPUT_TOKENS = 40  # a zoom or recall call: its name and a few words of input
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
    """Builds the reply request for a turn and accounts it on one cache per mark lifetime; with
    ``with_tools``, also the same turns with their tool steps, on caches of their own."""

    def __init__(
        self,
        clock: SimulatedClock,
        ttls: tuple[str, ...] = ("5m",),
        *,
        model: str = REPLY_MODEL,
        output_tokens: int = REPLY_OUTPUT_TOKENS,
        prices: PriceTable | None = None,
        with_tools: bool = False,
        keep_warm: bool = False,
    ) -> None:
        self.clock, self.model, self.output_tokens = clock, model, output_tokens
        self.system = reply_system_prompt()
        self.tools: list[dict[str, Any]] = TOOLS
        self.meters = {ttl: CacheMeter(model, corpus_seconds(clock), prices) for ttl in ttls}
        self.tool_meters = (
            {ttl: CacheMeter(model, corpus_seconds(clock), prices) for ttl in ttls} if with_tools else {}
        )
        self.causes = {ttl: CauseLedger() for ttl in ttls}
        # What-if: the bot keeps each chat's prompt warm between turns (see KeepWarm).
        self.warm = KeepWarm(clock, model, prices) if keep_warm else None
        price = (prices or PriceTable()).lookup(model)
        assert price is not None, f"no price for {model}"
        self.price = price
        self.gaps = TurnGaps()  # the bot's own per-chat lifetime choice, for the "auto" meter
        self.turns = 0  # counted turns
        self.largest_prompt_bytes = 0
        self._shape: TurnShape | None = None

    def account(
        self,
        view: PromptView,
        index: int,
        record: ImportedMessage,
        *,
        counted: bool = True,
        tool_results: Sequence[ToolStep] = (),
    ) -> None:
        """One turn answering ``record``; ``counted`` False: a warm-up turn (the caches see it,
        the figures do not); ``tool_results``: the steps this turn takes, for the tool meters."""
        now = self.clock.now()
        note = TurnNote(now, view.timezone, (Trigger(record.author_name, 0, index),))
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
        shape = TurnShape.of(view, now)
        cause = turn_cause(self._shape, shape)
        self._shape = shape
        if counted:
            self.turns += 1
            self.largest_prompt_bytes = max(self.largest_prompt_bytes, request_bytes(body))
        auto_lifetimes = self.gaps.lifetimes(0, now) if AUTO in self.meters else ALL_FIVE_MINUTES
        for ttl, meter in self.meters.items():
            sent = request(lifetimes=auto_lifetimes) if ttl == AUTO else with_ttl(body, ttl)
            usage = meter.account(sent, self.output_tokens, count=counted)
            if counted:
                self.causes[ttl].add(cause, usage, self.price)
        if self.tool_meters:
            self._account_steps(request, tool_results, auto_lifetimes, counted)
        if self.warm is not None:
            self.warm.turn(request(lifetimes=KeepWarm.LIFETIMES), self.output_tokens, counted)

    def _account_steps(
        self,
        request: Callable[..., dict[str, Any]],
        results: Sequence[ToolStep],
        lifetimes: MarkLifetimes,
        counted: bool,
    ) -> None:
        """The turn as the tool loop sends it: one request per step, each ending with the steps
        so far (the last mark moves to the newest tool result), the answer at the last."""
        for ttl, meter in self.tool_meters.items():
            steps: list[dict[str, Any]] = []
            for step in [*results, None]:
                body = (
                    request(steps=steps, lifetimes=lifetimes)
                    if ttl == AUTO
                    else with_ttl(request(steps=steps), ttl)
                )
                meter.account(
                    body, self.output_tokens if step is None else TOOL_USE_OUTPUT_TOKENS, count=counted
                )
                if step is not None:
                    steps = [*steps, *step.messages(len(steps))]

    def figures(self) -> dict[str, MeterFigures]:
        return {ttl: meter.totals for ttl, meter in self.meters.items()}

    def tool_figures(self) -> dict[str, MeterFigures]:
        return {ttl: meter.totals for ttl, meter in self.tool_meters.items()}

    def cause_figures(self) -> dict[str, dict[str, dict[str, Any]]]:
        return {ttl: ledger.figures(self.turns) for ttl, ledger in self.causes.items()}


@dataclass(slots=True)
class _PingSeconds:
    """The keep-warm cache's clock: the corpus's, or the moment of a ping being priced."""

    clock: SimulatedClock
    at: float | None = None

    def __call__(self) -> float:
        return self.at if self.at is not None else self.clock.now().timestamp()


class KeepWarm:
    """What-if, priced on a cache of its own with the bot's marks: after a turn, the bot sends the
    same request again (1 output token) every 55 minutes while the chat is quiet, for at most 12
    hours, so that the 1-hour marks never lapse between a group's bursts and over a night. A ping
    reads the prefix (0.05x or 0.1x the input price) instead of the next turn writing it again
    (2x at 1 hour, 1.25x at 5 minutes). Pings repeat the last turn's prompt: after a quiet swap
    the next turn writes the new row, as the live bot's first ping after the swap would."""

    PING_EVERY = 55 * 60.0
    PING_FOR = 12 * 3600.0
    LIFETIMES = MarkLifetimes(system="1h", body="1h", last="5m")  # pings keep 1-hour marks alive

    def __init__(self, clock: SimulatedClock, model: str, prices: PriceTable | None) -> None:
        self.clock = _PingSeconds(clock)
        self.meter = CacheMeter(model, self.clock, prices)
        self.pings = 0  # counted pings
        self._last: tuple[float, dict[str, Any]] | None = None

    def turn(self, body: dict[str, Any], output_tokens: int, counted: bool) -> None:
        now = self.clock()
        if self._last is not None:
            last_at, last_body = self._last
            ping_at = last_at + self.PING_EVERY
            while ping_at < now and ping_at - last_at <= self.PING_FOR:
                self.clock.at = ping_at
                self.meter.account({**last_body, "max_tokens": 1}, 1, count=counted)
                self.pings += 1 if counted else 0
                ping_at += self.PING_EVERY
            self.clock.at = None
        self.meter.account(body, output_tokens, count=counted)
        self._last = (now, body)


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One tool call of a turn and its result as the bot would send it back."""

    name: str
    arguments: dict[str, Any]
    result: str

    def messages(self, number: int) -> list[dict[str, Any]]:
        """The assistant's call and the user's result, as two messages of the tool loop."""
        use_id = f"toolu_bench_{number}"
        call = {"type": "tool_use", "id": use_id, "name": self.name, "input": self.arguments}
        answer = {"type": "tool_result", "tool_use_id": use_id, "content": self.result}
        return [{"role": "assistant", "content": [call]}, {"role": "user", "content": [answer]}]


def request_bytes(body: dict[str, Any]) -> int:
    """UTF-8 bytes of the prompt's text blocks (tools as their JSON size is left out: constant)."""
    total = sum(len(b["text"].encode()) for b in body.get("system") or [])
    for message in body["messages"]:
        content = message["content"]
        blocks = [content] if isinstance(content, str) else [b.get("text", "") for b in content]
        total += sum(len(text.encode()) for text in blocks)
    return total
