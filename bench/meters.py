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
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from bench.cache_model import CacheMeter, MeterFigures, with_ttl
from bench.reply_causes import PINGS, CauseLedger, TurnShape, turn_cause
from bot.core.cache_policy import CachePlan, MarkLifetimes, TurnGaps
from bot.core.keep_warm import PING_MAX_TOKENS, ping_request, ping_times
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
DEFAULT_KEEP_WARM_HOURS = 24.0  # KEEP_WARM_HOURS, typed in and checked alike
REPLY_OUTPUT_TOKENS = 150  # a group-chat answer of a few sentences
REPLY_MAX_TOKENS = 1024
TOOL_USE_OUTPUT_TOKENS = 40  # a zoom or recall call: its name and a few words of input
# The bot's policy (bot/core/cache_policy.py): each mark's lifetime chosen from the chat's recent
# gaps between turns. "5m" and "1h" put every mark at that lifetime.
AUTO = "auto"
WITHOUT_KEEP_WARM = "auto, without keep-warm"  # the policy before keep-warm: no pings


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
    ``with_tools``, also the same turns with their tool steps, on caches of their own.

    The "auto" meter is the bot's policy: lifetimes chosen per chat knowing the keep-warm pings
    (bot/core/cache_policy.py), and the pings themselves (bot/core/keep_warm.py), which the
    replay asks for with :meth:`pings_due` and prices with :meth:`ping` at their moments. Beside
    it, WITHOUT_KEEP_WARM is the policy before keep-warm (same gaps rule, no pings)."""

    def __init__(
        self,
        clock: SimulatedClock,
        ttls: tuple[str, ...] = ("5m",),
        *,
        model: str = REPLY_MODEL,
        output_tokens: int = REPLY_OUTPUT_TOKENS,
        prices: PriceTable | None = None,
        with_tools: bool = False,
        keep_warm_hours: float = DEFAULT_KEEP_WARM_HOURS,
    ) -> None:
        self.clock, self.model, self.output_tokens = clock, model, output_tokens
        self.seconds = _MeterSeconds(clock)  # the corpus's time, or a ping's moment
        self.system = reply_system_prompt()
        self.tools: list[dict[str, Any]] = TOOLS
        kinds = (*ttls, WITHOUT_KEEP_WARM) if AUTO in ttls else ttls
        self.meters = {ttl: CacheMeter(model, self.seconds, prices) for ttl in kinds}
        self.tool_meters = (
            {ttl: CacheMeter(model, self.seconds, prices) for ttl in kinds} if with_tools else {}
        )
        self.causes = {ttl: CauseLedger() for ttl in kinds}
        price = (prices or PriceTable()).lookup(model)
        assert price is not None, f"no price for {model}"
        self.price = price
        self.gaps = TurnGaps(most_warm_for=keep_warm_hours * 3600)  # the bot's per-chat plan
        self.gaps_before = TurnGaps()  # the same rule without pings (WITHOUT_KEEP_WARM)
        self.turns = 0  # counted turns
        self.pings = 0  # counted pings
        self.largest_prompt_bytes = 0
        self._shape: TurnShape | None = None
        self._warm: _Warm | None = None  # the auto meter's chat, kept warm since its last turn

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
        plan = self.gaps.plan(0, now) if AUTO in self.meters else None
        chosen = (
            {AUTO: plan.lifetimes, WITHOUT_KEEP_WARM: self.gaps_before.plan(0, now).lifetimes} if plan else {}
        )
        for ttl, meter in self.meters.items():
            sent = request(lifetimes=chosen[ttl]) if ttl in chosen else with_ttl(body, ttl)
            usage = meter.account(sent, self.output_tokens, count=counted)
            if counted:
                self.causes[ttl].add(cause, usage, self.price)
        if self.tool_meters:
            self._account_steps(request, tool_results, chosen, counted)
        stamp = now.timestamp()
        warm = plan is not None and plan.kept_warm_for > 0
        self._warm = _Warm(stamp, stamp, plan, counted) if warm and plan is not None else None

    def pings_due(self, until: datetime) -> list[float]:
        """The keep-warm pings the bot sends before ``until`` (seconds of corpus time)."""
        warm = self._warm
        if warm is None:
            return []
        return ping_times(warm.turn_at, warm.sent_at, until.timestamp(), warm.plan.kept_warm_for)

    def ping(self, view: PromptView, at: float) -> None:
        """The ping at ``at`` (one of :meth:`pings_due`), built from ``view``, the memory then;
        priced on the auto meters and put down to its own cause."""
        warm = self._warm
        assert warm is not None and at >= warm.sent_at
        body = ping_request(
            model=self.model, system=self.system, tools=self.tools, view=view, lifetimes=warm.plan.lifetimes
        )
        self.seconds.at = at
        try:
            usage = self.meters[AUTO].account(body, PING_MAX_TOKENS, count=warm.counted)
            if AUTO in self.tool_meters:
                self.tool_meters[AUTO].account(body, PING_MAX_TOKENS, count=warm.counted)
        finally:
            self.seconds.at = None
        if warm.counted:
            self.pings += 1
            self.causes[AUTO].add(PINGS, usage, self.price, turn=False)
        self._warm = replace(warm, sent_at=at)

    def _account_steps(
        self,
        request: Callable[..., dict[str, Any]],
        results: Sequence[ToolStep],
        chosen: dict[str, MarkLifetimes],
        counted: bool,
    ) -> None:
        """The turn as the tool loop sends it: one request per step, each ending with the steps
        so far (the last mark moves to the newest tool result), the answer at the last."""
        for ttl, meter in self.tool_meters.items():
            steps: list[dict[str, Any]] = []
            for step in [*results, None]:
                body = (
                    request(steps=steps, lifetimes=chosen[ttl])
                    if ttl in chosen
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
class _MeterSeconds:
    """A reply meter's cache clock: the corpus's, or the moment of a ping being priced. An
    object, not a lambda: meters travel in a run's figures between processes (pickled)."""

    clock: SimulatedClock
    at: float | None = None

    def __call__(self) -> float:
        return self.at if self.at is not None else self.clock.now().timestamp()


@dataclass(frozen=True, slots=True)
class _Warm:
    """The auto meter's chat after a turn planned with pings: when it was, the last request
    (turn or ping), the turn's plan (the pings send its marks) and whether its figures count."""

    turn_at: float
    sent_at: float
    plan: CachePlan
    counted: bool


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
