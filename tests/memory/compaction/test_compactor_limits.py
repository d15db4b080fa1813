"""The compactor against the real SDK and the local fake when the API pushes back: a rate
limit pauses all compaction for its retry-after while replies go through, and a model that
ignores the multi-task format still gets every node built."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from typing import Any, NamedTuple

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.core.tools import ToolResult
from bot.core.turn import Trigger, TurnNote
from bot.core.turn_loop import TurnRequest, run_turn
from memory.claude import make_client
from memory.clock import SimulatedClock
from memory.compaction.anthropic_summarizer import AnthropicSummarizer
from memory.compaction.compactor import Compactor
from memory.config import MemoryConfig
from memory.engine import MemoryEngine
from memory.storage.models import MemoryRow, TreeNode
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault
from tests.fakes.anthropic_compactor import OnePlainLine
from tests.memory.helpers import SMALL, START, message, new_chat

Sessions = async_sessionmaker[AsyncSession]
WORDS = "tangerine " * 70  # 700 bytes: every leaf needs the model


async def _no_tools(name: str, args: Any) -> ToolResult:
    raise AssertionError("no tool is offered")


class QuietChat(NamedTuple):
    client: Any
    engine: MemoryEngine
    compactor: Compactor
    clock: SimulatedClock
    chat: int


async def _quiet_chat(
    sessions: Sessions, fake: FakeAnthropic, config: MemoryConfig, messages: int
) -> QuietChat:
    """A chat of `messages` long messages (each needs the model), quiet long enough to compact."""
    client = make_client("test", fake.base_url, timeout=5.0, max_retries=0)
    clock = SimulatedClock(START)
    summarizer = AnthropicSummarizer(client, model="claude-haiku-5-5")
    compactor = Compactor(sessions, config, summarizer, clock)
    engine = MemoryEngine(sessions, config, compactor=compactor, clock=clock)
    chat = await new_chat(engine)
    for k in range(messages):
        await engine.append(chat, message(k, f"{WORDS}{k}"))
    clock.advance(config.quiet_seconds + 1)
    return QuietChat(client, engine, compactor, clock, chat)


async def test_a_rate_limit_pauses_compaction_for_its_retry_after_and_replies_go_through(
    sessions: Sessions,
) -> None:
    async with FakeAnthropic() as fake:
        fake.faults.fail_next(1, Fault("rate_limit", retry_after=30), match="compact")
        client, engine, compactor, clock, chat = await _quiet_chat(sessions, fake, SMALL, messages=40)

        first = await engine.compact(chat)
        limited = fake.requests("compact")
        # The calls of the pass started together (nothing cached to wait for); none started after
        # the 429 came back: at most JOBS requests in all, one of them limited.
        assert first.failed_calls == 1 and [e.status for e in limited].count(429) == 1
        assert len(limited) <= SMALL.jobs
        assert compactor.paused_until == clock.now() + timedelta(seconds=30)  # retry-after, not RETRY (10 s)

        # Paused: a reply turn on the same key goes through...
        view = await engine.prompt_view(chat)
        note = TurnNote(clock.now(), "UTC", (Trigger("Pia", 1000, 39),))
        request = TurnRequest(
            model="claude-sonnet-5-5",
            max_tokens=200,
            system="You are Eva.",
            tools=[],
            view=view,
            note=note,
            max_steps=1,
        )
        turn = await run_turn(client, request, _no_tools)
        assert turn.failure is None and turn.text
        # ...while compaction sends nothing until the 30 s are over, even past RETRY.
        clock.advance(20)
        waiting = await engine.compact(chat)
        assert waiting.calls == 0 and len(fake.requests("compact")) == len(limited)

        clock.advance(11)
        done = await asyncio.wait_for(engine.compact(chat, until_idle=True), timeout=60)
        await client.close()
        assert done.calls > 0 and done.swaps >= 1
        assert all(e.status == 200 for e in fake.requests("compact")[len(limited) :])
    async with sessions() as s:
        built = await s.scalar(select(func.count()).select_from(TreeNode).where(TreeNode.by_model))
    assert built is not None and built >= 40  # every message was compressed by the model


async def test_a_model_that_ignores_the_multi_task_format_still_gets_every_node_built(
    sessions: Sessions,
) -> None:
    config = replace(SMALL, tasks_per_call=4)
    async with FakeAnthropic() as fake:
        model = OnePlainLine()
        fake.compactor = model  # type: ignore[assignment]
        quiet = await _quiet_chat(sessions, fake, config, messages=24)
        report = await asyncio.wait_for(quiet.engine.compact(quiet.chat, until_idle=True), timeout=60)
        await quiet.client.close()
    assert 4 in model.steps_asked, "the multi-task calls were tried first"
    assert model.steps_asked[-1] == 1, "the failed tasks were then sent alone"
    assert report.swaps >= 1
    async with sessions() as s:
        leaves = await s.scalar(
            select(func.count()).select_from(TreeNode).where(TreeNode.level == 0, TreeNode.by_model)
        )
        state = (await s.execute(select(MemoryRow).where(MemoryRow.chat_id == quiet.chat))).scalar_one()
    assert state.staged is None and not state.needs_repair
    assert leaves == state.boundary  # every leaf under the row was written by the model
