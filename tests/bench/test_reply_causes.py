"""Where the reply money goes: each turn put down to what changed since the last one, and the
causes' bills adding up to the meter's own total."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from bench.meters import AUTO, WITHOUT_KEEP_WARM, ReplyMeter, ToolStep
from bench.reply_causes import (
    CARDS,
    FIRST,
    GAP_OVER_HOUR,
    GAP_UNDER_HOUR,
    PINGS,
    ROW_END,
    ROW_START,
    TAIL,
    TurnShape,
    at_cache_read_price,
    turn_cause,
)
from bench.tool_steps import query_words, steps_for
from memory import ImportedMessage, PromptView
from memory.clock import SimulatedClock
from memory.pricing import PriceTable, Usage

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
ROW = [f"{i}+1 line number {i} " + "words " * 60 for i in range(40)]


def _view(row: list[str], tail: int, people: list[str] | None = None) -> PromptView:
    tail_lines = [f"#{1000 + i} [10:00] max: message {i} " + "text " * 20 for i in range(tail)]
    return PromptView(1, 1000 + tail, 1000, "UTC", list(row), tail_lines, people_lines=people or [])


def _shape(view: PromptView, minutes: float) -> TurnShape:
    return TurnShape.of(view, T0 + timedelta(minutes=minutes))


def test_each_turn_is_put_down_to_the_first_change_that_holds() -> None:
    base = _view(ROW, 10)
    before = _shape(base, 0)
    assert turn_cause(None, before) == FIRST
    assert turn_cause(before, _shape(_view(ROW, 12), 2)) == TAIL
    assert turn_cause(before, _shape(_view(ROW, 12), 20)) == GAP_UNDER_HOUR
    assert turn_cause(before, _shape(_view([*ROW, "new line"], 3), 2)) == ROW_END
    assert turn_cause(before, _shape(_view(["merged line", *ROW[2:]], 3), 2)) == ROW_START
    assert turn_cause(before, _shape(_view(ROW, 12, ["max: likes tea"]), 2)) == CARDS
    # After more than an hour every mark is gone, whatever else changed.
    assert turn_cause(before, _shape(_view(["merged line", *ROW[2:]], 3), 61)) == GAP_OVER_HOUR


def _record(index: int) -> ImportedMessage:
    return ImportedMessage(None, "max", False, T0, None, f"message {index}", (), None, str(index), None)


def test_the_causes_add_up_to_what_the_meter_billed() -> None:
    clock = SimulatedClock()
    meter = ReplyMeter(clock, ("5m", AUTO))
    row = list(ROW)
    for turn, minutes in enumerate([0, 2, 4, 30, 33, 120, 122, 124, 200]):
        clock.set(T0 + timedelta(minutes=minutes))
        if turn == 6:
            row = ["merged", *row[2:]]
        meter.account(_view(row, 8 + 2 * turn), 1000 + turn, _record(turn), counted=turn > 0)
    assert meter.turns == 8  # the warm-up turn went through the cache, uncounted
    for ttl, figures in meter.figures().items():
        causes = meter.cause_figures()[ttl]
        total = sum(c["usd_per_turn"] for c in causes.values())
        assert abs(total - figures.cost_usd / 8) < 5e-5
        assert sum(c["turns"] for c in causes.values()) == 8
        kinds = sum(v for c in causes.values() for k, v in c.items() if k.endswith("_usd_per_turn"))
        assert abs(kinds - total) < 5e-5
        assert FIRST not in causes  # the first turn was the uncounted one
        assert causes[GAP_OVER_HOUR]["turns"] == 2 and causes[ROW_START]["turns"] == 1


def test_the_other_cache_read_price_reprices_only_the_reads() -> None:
    table = PriceTable()
    price = table.lookup("claude-sonnet-5-5")
    assert price is not None
    usage = Usage(input_tokens=1000, output_tokens=150, cache_write_5m_tokens=2000, cache_read_tokens=30_000)
    at_table = float(table.cost("claude-sonnet-5-5", usage))
    doubled = replace_read(table, Decimal("0.20"))
    expected = float(doubled.cost("claude-sonnet-5-5", usage))
    assert abs(at_cache_read_price(at_table, 30_000, price, Decimal("0.20")) - expected) < 1e-12
    assert expected > at_table


def replace_read(table: PriceTable, read: Decimal) -> PriceTable:
    prices = dict(table.prices)
    prices["claude-sonnet-5-5"] = prices["claude-sonnet-5-5"].model_copy(update={"cache_read": read})
    return PriceTable(prices)


def test_a_quarter_of_turns_take_tool_steps_and_recall_the_longest_words() -> None:
    drawn = [steps_for(i) for i in range(20_000)]
    assert 0.04 <= drawn.count(2) / len(drawn) <= 0.06
    assert 0.185 <= drawn.count(1) / len(drawn) <= 0.215
    assert query_words("can't, my sister's wedding in Borås on the 14th") == "wedding sister borås 14th"
    assert query_words("ok so") == ""


def test_a_turn_with_tool_steps_costs_more_than_the_same_turn_without() -> None:
    clock = SimulatedClock()
    meter = ReplyMeter(clock, (AUTO,), with_tools=True)
    steps = [ToolStep("recall", {"query": "wedding"}, "#12 max: my sister's wedding " * 40)]
    for turn in range(4):
        clock.set(T0 + timedelta(minutes=2 * turn))
        meter.account(
            _view(ROW, 8 + turn), 1000 + turn, _record(turn), tool_results=steps if turn == 3 else []
        )
    plain, tools = meter.figures()[AUTO], meter.tool_figures()[AUTO]
    assert tools.requests == plain.requests + 1
    assert tools.cost_usd > plain.cost_usd
    assert replace(plain, cost_usd=0) != replace(tools, cost_usd=0)


def test_the_bots_policy_pings_through_quiet_hours_and_reads_instead_of_writing() -> None:
    clock = SimulatedClock()
    meter = ReplyMeter(clock, (AUTO,))
    # Turns 130 minutes apart: from the second turn on, the gaps call for pings (two, at 55 and
    # 110 minutes, keep the entry to 170: 0.2x against a 1.25x write).
    for turn, minutes in enumerate([0, 130, 260, 390]):
        at = T0 + timedelta(minutes=minutes)
        for ping_at in meter.pings_due(at):
            meter.ping(_view(ROW, 8), ping_at)
        clock.set(at)
        meter.account(_view(ROW, 8), 1000 + turn, _record(turn))
    assert meter.pings == 2 + 2  # none after the first turn (no gaps known yet)
    after, before = meter.figures()[AUTO], meter.figures()[WITHOUT_KEEP_WARM]
    assert after.requests == 4 + 4 and before.requests == 4
    # Turns 3 and 4 read the row the pings kept alive; without them, every turn writes it again.
    assert after.cache_read_tokens > 2 * before.prompt_tokens / 4 * 0.9
    assert before.cache_read_tokens < before.prompt_tokens / 10
    assert after.cost_usd < before.cost_usd
    causes = meter.cause_figures()[AUTO]
    assert causes[PINGS]["turns"] == 0 and causes[PINGS]["usd_per_turn"] > 0
    total = sum(c["usd_per_turn"] for c in causes.values())
    assert abs(total - after.cost_usd / 4) < 1e-4  # the pings are in the per-turn figure
