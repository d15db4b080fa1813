"""The real-model mode of bench/fidelity.py: the tree built by the Anthropic compactor, each
probe asked as a real reply turn, and the same probe asked of a real rolling summary.

- Compaction: memory's AnthropicSummarizer at COMPACT_MODEL (``--compact-model``), as the bot
  builds it (bot/app.py), every call's usage priced and counted against ``--max-usd``.
- Eva's turn: the bot's own request and tool loop (bot/core/turn.py, bot/core/turn_loop.py
  ``run_turn``, bot/core/tools.py ``run_tool`` on the engine's zoom and recall), the system prompt
  of a bot on default settings (bench/meters.py), at REPLY_MODEL, up to 6 calls (TOOL_STEPS).
  The question is a message of a person not in the log ("not remembered here"), so the corpus
  stays the corpus; only zoom and recall are offered.
- The rolling summary (bench/baselines.py's rule) is written by the same compact model, and
  its turn is the same layout with the summary where the row goes and no tools (a rolling
  summary has nothing to zoom into).

An answer is right when it holds the expected value and the person to credit (normalised,
bench/fidelity_plant.py ``contains``); for an erased fact, when it does not hold the value.
Spending is checked after every compactor pass, summary rewrite and turn: the run stops at
the first check that finds ``--max-usd`` spent, and reports what it measured until then.
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from anthropic import AsyncAnthropic

from bench.baselines import ROLLING_SYSTEM, RollingSummary
from bench.fidelity_measure import FidelityHooks, kind_figures
from bench.fidelity_plant import KINDS, Planted, Probe, contains
from bench.meters import REPLY_MAX_TOKENS, reply_system_prompt
from bench.replay_loop import replay
from bot.core.tools import MEMORY_TOOLS, TOOLS, ToolContext, ToolResult, run_tool
from bot.core.turn import Trigger, TurnNote
from bot.core.turn_loop import TurnRequest, TurnResult, run_turn
from memory import (
    AnthropicSummarizer,
    CompactTask,
    MemoryConfig,
    MemoryEngine,
    PriceTable,
    PromptView,
    StillCurrent,
    SummaryBatch,
    Usage,
)
from memory.claude import ClaudeError, create_message, make_client, message_text, usage_from_response
from memory.clock import SimulatedClock

PIPELINE_NOTE = (
    "Accuracy means something only with a real model: against the test fake "
    "(tests/fakes/anthropic_api.py) this run proves the pipeline, not quality."
)
TOOL_STEPS = 6  # the bot's default TOOL_STEPS (bot/settings.py)
TOOL_RESULT_BYTES = 8000  # the bot's default TOOL_RESULT_BYTES
ASKER_NAME, ASKER_ID = "fidelity-check", 1
MEMORY_ONLY = [tool for tool in TOOLS if tool["name"] in MEMORY_TOOLS]
TIMEOUT_SECONDS = 120.0


class BudgetReached(Exception):
    """``--max-usd`` is spent: the run stops here."""


@dataclass
class Budget:
    max_usd: float
    prices: PriceTable = field(default_factory=PriceTable)
    spent: Decimal = Decimal(0)
    by_part: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))

    def add(self, part: str, model: str, usage: Usage) -> None:
        cost = self.prices.cost(model, usage)
        self.spent += cost
        self.by_part[part] += cost

    def check(self) -> None:
        if self.spent >= Decimal(str(self.max_usd)):
            raise BudgetReached(f"${float(self.spent):.4f} spent, --max-usd {self.max_usd}")


@dataclass
class RealModel:
    client: AsyncAnthropic
    base_url: str | None
    reply_model: str
    compact_model: str
    budget: Budget

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RealModel:
        base_url = args.model_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        key = args.api_key or os.environ.get("ANTHROPIC_API_KEY") or ""
        client = make_client(key, base_url, TIMEOUT_SECONDS, max_retries=2)
        return cls(client, base_url, args.reply_model, args.compact_model, Budget(args.max_usd))

    def announce(self, estimate: dict[str, Any]) -> str:
        over = (
            " (over --max-usd: the run will stop before the end)"
            if estimate["total_usd"] > self.budget.max_usd
            else ""
        )
        return (
            f"estimated cost: ${estimate['total_usd']:.2f}{over}: compaction "
            f"${estimate['compaction_usd']:.2f} at {estimate['compact_model']}, Eva's turns "
            f"${estimate['reply_turns_usd']:.2f}, the rolling summary "
            f"${estimate['rolling_summary_usd']:.2f} (at list prices, memory/pricing.py; assumed: "
            f"{estimate['assumed']}). Stops at --max-usd ${self.budget.max_usd:.2f}. {PIPELINE_NOTE}"
        )


class MeteredAnthropic:
    """The Anthropic summarizer, each call's usage counted against the budget."""

    def __init__(self, model: RealModel, node_bytes: int, tries: int) -> None:
        self.inner = AnthropicSummarizer(
            model.client, model=model.compact_model, node_bytes=node_bytes, tries=tries
        )
        self.budget, self.model = model.budget, model.compact_model
        self.calls = 0

    async def summarize(
        self,
        context: Sequence[str],
        tasks: Sequence[CompactTask],
        *,
        still_current: StillCurrent | None = None,
    ) -> SummaryBatch:
        batch = await self.inner.summarize(context, tasks, still_current=still_current)
        self.calls += batch.usage.calls
        self.budget.add("compaction", self.model, batch.usage.as_usage())
        return batch


class RealRollingSummary(RollingSummary):
    """bench/baselines.py's rolling summary, each rewrite written by the model."""

    def __init__(self, config: MemoryConfig, clock: SimulatedClock, model: RealModel) -> None:
        super().__init__(config, clock)
        self.model = model
        self.pending: tuple[str, str, int] | None = None
        self.failures = 0

    def summarized(self, old: str, chat: str, size: int) -> list[str]:
        self.pending = (old, chat, size)
        return self.summary  # until settle() has the model's text

    async def settle(self) -> None:
        if self.pending is None:
            return
        old, chat, size = self.pending
        self.pending = None
        request = {
            "model": self.model.compact_model,
            "max_tokens": size // 3 + 200,
            "system": [{"type": "text", "text": ROLLING_SYSTEM}],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": f"<summary>\n{old}\n</summary>"},
                        {
                            "type": "text",
                            "text": f"<chat>\n{chat}\n</chat>\nWrite the new summary, at most {size} bytes.",
                        },
                    ],
                }
            ],
        }
        try:
            message = await create_message(self.model.client, **request)
        except ClaudeError:
            self.failures += 1  # the old summary stays, as a rolling-summary bot would keep it
            return
        self.model.budget.add("rolling_summary", self.model.compact_model, usage_from_response(message))
        self.summary = [line for line in message_text(message).splitlines() if line.strip()]


def judged(probe: Probe, text: str) -> bool:
    """Right: the expected value and the person to credit are in the answer; for an erased
    fact, the value is not."""
    if probe.kind == "erased":
        return not contains(text, probe.expected)
    return contains(text, probe.expected) and contains(text, probe.credit)


@dataclass
class Answer:
    probe: Probe
    right: bool
    tools: list[str]
    failure: str | None


async def _no_forget() -> None:
    """forget_me is not offered here; nothing to show."""


class RealAsker:
    """Each probe as a real turn of Eva (row, zoom, recall) and of the rolling summary."""

    def __init__(self, model: RealModel, clock: SimulatedClock, rolling: RealRollingSummary) -> None:
        self.model, self.clock, self.rolling = model, clock, rolling
        self.system = reply_system_prompt()
        self.eva: list[Answer] = []
        self.baseline: list[Answer] = []

    async def after_message(self, index: int) -> None:
        self.model.budget.check()
        await self.rolling.settle()
        self.model.budget.check()

    async def _turn(
        self, part: str, view: PromptView, probe: Probe, memory: MemoryEngine | None, chat_id: int
    ) -> TurnResult:
        """One reply turn; with ``memory``, zoom and recall on it (Eva), without, no tools."""
        tools = MEMORY_ONLY if memory is not None else []
        note = TurnNote(
            self.clock.now(), view.timezone, (Trigger(ASKER_NAME, ASKER_ID, None, probe.question),)
        )
        request = TurnRequest(
            model=self.model.reply_model,
            max_tokens=REPLY_MAX_TOKENS,
            system=self.system,
            tools=tools,
            view=view,
            note=note,
            max_steps=TOOL_STEPS if tools else 1,
        )

        async def tool(name: str, args: Any) -> ToolResult:
            if memory is None:
                return ToolResult(f"there is no tool named {name!r}", is_error=True)
            context = ToolContext(memory, chat_id, ASKER_ID, ASKER_NAME, TOOL_RESULT_BYTES, _no_forget)
            return await run_tool(context, name, args)

        result = await run_turn(self.model.client, request, tool)
        for usage in result.usages:
            self.model.budget.add(part, self.model.reply_model, usage)
        return result

    async def ask(self, probe: Probe, memory: MemoryEngine, chat_id: int, rolling: PromptView) -> None:
        self.model.budget.check()
        view = await memory.prompt_view(chat_id)
        result = await self._turn("eva_turns", view, probe, memory, chat_id)
        self.eva.append(Answer(probe, judged(probe, result.text), result.tool_calls, result.failure))
        self.model.budget.check()
        result = await self._turn("rolling_summary_turns", rolling, probe, None, chat_id)
        self.baseline.append(Answer(probe, judged(probe, result.text), result.tool_calls, result.failure))


def answer_figures(answers: list[Answer]) -> dict[str, dict[str, Any]]:
    """Per kind: accuracy, failed turns, and how often the model zoomed or recalled first."""
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        mine = [a for a in answers if a.probe.kind == kind]
        if not mine:
            continue
        out[kind] = {
            "asked": len(mine),
            "accuracy": round(sum(a.right for a in mine) / len(mine), 4),
            "failed_turns": sum(1 for a in mine if a.failure),
            "zoomed_share": round(sum(1 for a in mine if "zoom" in a.tools) / len(mine), 4),
            "recalled_share": round(sum(1 for a in mine if "recall" in a.tools) / len(mine), 4),
            "mean_tool_calls": round(sum(len(a.tools) for a in mine) / len(mine), 2),
        }
    return out


async def real_model_run(
    planted: Planted, corpus: Path, url: str, config: MemoryConfig, model: RealModel
) -> dict[str, Any]:
    """The replay with the real compactor and a real turn per probe; stops at --max-usd."""
    clock = SimulatedClock()
    rolling = RealRollingSummary(config, clock, model)
    asker = RealAsker(model, clock, rolling)
    summarizer = MeteredAnthropic(model, config.node_bytes, config.tries)
    hooks = FidelityHooks(planted, config, asker=asker, summarizer=summarizer, rolling=rolling, clock=clock)
    stopped = None
    try:
        await replay(corpus, database_url=url, config=config, hooks=hooks, records=planted.records)
    except BudgetReached as exc:
        stopped = str(exc)
    budget = model.budget
    return {
        "note": PIPELINE_NOTE,
        "model_url": model.base_url or "https://api.anthropic.com",
        "reply_model": model.reply_model,
        "compact_model": model.compact_model,
        "stopped_at_max_usd": stopped,
        "probes_asked": len(asker.eva),
        "eva": answer_figures(asker.eva),
        "rolling_summary": answer_figures(asker.baseline),
        "rolling_summary_failed_rewrites": rolling.failures,
        "model_free_on_this_tree": kind_figures(hooks.results),
        "compactor_calls": summarizer.calls,
        "cost_usd": {
            "total": round(float(budget.spent), 4),
            **{part: round(float(cost), 4) for part, cost in sorted(budget.by_part.items())},
        },
    }
