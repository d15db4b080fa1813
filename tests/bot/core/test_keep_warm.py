"""Keep-warm planning (pure): how long a chat is pinged, when, and what a ping sends.

The expected horizons are worked out by hand from the rule's own terms: a ping every 55
minutes, a 1-hour entry alive for 60 minutes after its last read, a read at 0.1x the input
price, a write at 1.25x (5 minutes) or 2x (1 hour)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core.cache_policy import CachePlan, MarkLifetimes, choose_plan
from bot.core.keep_warm import PING_NOTE, next_ping, ping_request, ping_times
from bot.core.turn import Trigger, TurnNote, build_request
from memory.reading.view import PromptView
from tests.fakes.anthropic_validation import validate_request

MINUTE, HOUR = 60.0, 3600.0
HOUR_MARKS = MarkLifetimes(system="1h", body="1h", last="5m")


def test_a_friend_groups_nights_are_pinged_through() -> None:
    # A 10-hour night: the 10th ping (550 min) keeps the entry to 610 min, past the 600-min gap;
    # the 9th (495 min) only to 555. Ten reads (1.0x) against a 5-minute write (1.25x).
    night = 10 * HOUR
    assert choose_plan([night] * 8, 24 * HOUR) == CachePlan(HOUR_MARKS, 550 * MINUTE)
    # Seven 20-minute gaps and one night: the 1-hour entry is read in every short gap anyway.
    assert choose_plan([20 * MINUTE] * 7 + [night], 24 * HOUR) == CachePlan(HOUR_MARKS, 550 * MINUTE)


def test_a_chat_spoken_to_once_a_day_is_not_pinged() -> None:
    # Through 24 hours: 26 pings (the 26th at 1,430 min keeps it to 1,490) cost 2.6x > 1.25x.
    plan = choose_plan([24 * HOUR] * 8, 24 * HOUR)
    assert plan == CachePlan(MarkLifetimes(system="1h", body="5m", last="5m"), 0.0)


def test_the_hosts_limit_bounds_the_horizon() -> None:
    # Only 4 hours allowed: a 10-hour night lapses anyway (4 reads + a 2x write > 1.25x).
    assert choose_plan([10 * HOUR] * 8, 4 * HOUR).lifetimes.body == "5m"
    # Keep-warm off: the rule of before (gaps of hours: 5-minute marks; of 20 minutes: 1 hour).
    assert choose_plan([10 * HOUR] * 8) == CachePlan(MarkLifetimes(system="1h", body="5m", last="5m"))
    assert choose_plan([20 * MINUTE] * 8) == CachePlan(HOUR_MARKS, 0.0)


def test_pings_come_every_55_minutes_until_the_horizon() -> None:
    turn = 1_000_000.0
    assert next_ping(turn, turn, 3 * HOUR) == turn + 55 * MINUTE
    assert next_ping(turn, turn + 165 * MINUTE, 3 * HOUR) is None  # a 4th at 220 min > 180
    assert ping_times(turn, turn, turn + 10 * HOUR, 3 * HOUR) == [turn + k * 55 * MINUTE for k in (1, 2, 3)]
    assert ping_times(turn, turn, turn + 100 * MINUTE, 3 * HOUR) == [turn + 55 * MINUTE]
    # A ping sent late (a slow tick): the next is 55 minutes after it, not after the schedule.
    assert next_ping(turn, turn + 57 * MINUTE, 3 * HOUR) == turn + 112 * MINUTE


def test_a_ping_is_the_turns_prefix_with_an_unmarked_note_and_the_api_accepts_it() -> None:
    view = PromptView(
        chat_id=1,
        total=20,
        boundary=4,
        timezone="UTC",
        row_lines=[f"0+{k} line {k}" for k in range(8)],
        tail_lines=[f"#{k} 2026-03-01 12:00 Pia: hello {k}" for k in range(4, 20)],
    )
    common = {"model": "claude-sonnet-5-5", "system": "You are Eva.", "tools": [], "view": view}
    ping = ping_request(**common, lifetimes=HOUR_MARKS)
    validate_request(ping)  # max_tokens 1, 1-hour marks before the rest: the API accepts it
    note = TurnNote(datetime(2026, 3, 1, 12, tzinfo=UTC), "UTC", (Trigger("Pia", 1, 19),))
    turn = build_request(**common, max_tokens=100, note=note, lifetimes=HOUR_MARKS)
    ping_blocks, turn_blocks = ping["messages"][0]["content"], turn["messages"][0]["content"]
    assert ping["max_tokens"] == 1 and ping["system"] == turn["system"]
    assert ping_blocks[:-1] == turn_blocks[: len(ping_blocks) - 1]  # same blocks, same marks
    assert ping_blocks[-1] == {"type": "text", "text": PING_NOTE}  # unmarked: nothing of it written
    assert sum("cache_control" in b for b in ping_blocks) == 2  # the row's and the tail's
