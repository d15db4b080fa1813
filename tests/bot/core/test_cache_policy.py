"""Each reply cache mark's lifetime, chosen from the chat's recent gaps between turns."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta

from bot.core.cache_policy import ALL_FIVE_MINUTES, MarkLifetimes, TurnGaps, choose_plan
from bot.core.turn import Trigger, TurnNote, build_request
from memory.reading.view import PromptView
from tests.fakes.anthropic_validation import validate_request

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_lifetimes_follow_the_gaps_between_turns() -> None:
    # Turns every 2 minutes: a 5-minute entry is always read again in time.
    assert choose_plan([120.0] * 6).lifetimes == MarkLifetimes(system="1h", body="5m", last="5m")
    # Every 20 minutes: a 5-minute entry would be written again at each turn (1.25x); 1 hour reads.
    assert choose_plan([1200.0] * 6).lifetimes == MarkLifetimes(system="1h", body="1h", last="5m")
    # Mostly hours apart: the 1-hour write (2x) would be wasted; 0.75 x 5/6 > 1.25 x 1/6.
    assert choose_plan([7200.0] * 5 + [1200.0]).lifetimes.body == "5m"
    # Half 20 minutes, half hours: 1.25 x 0.5 > 0.75 x 0.5, so 1 hour.
    assert choose_plan([7200.0, 1200.0] * 3).lifetimes.body == "1h"


def test_turn_gaps_are_kept_per_chat() -> None:
    gaps = TurnGaps()
    for k in range(5):
        gaps.plan(1, T0 + timedelta(minutes=20 * k))
        gaps.plan(2, T0 + timedelta(minutes=2 * k))
    assert gaps.plan(1, T0 + timedelta(minutes=100)).lifetimes.body == "1h"
    assert gaps.plan(2, T0 + timedelta(minutes=10)).lifetimes.body == "5m"


def test_mixed_lifetimes_make_a_request_the_api_accepts() -> None:
    view = PromptView(
        chat_id=1,
        total=20,
        boundary=4,
        timezone="UTC",
        row_lines=[f"0+{k} line {k}" for k in range(4)] + ["4+1 more"],
        tail_lines=[f"#{k} 2026-03-01 12:00 Pia: hello {k}" for k in range(4, 20)],
    )
    note = TurnNote(T0, "UTC", (Trigger("Pia", 1, 19),))
    chosen = MarkLifetimes(system="1h", body="1h", last="5m")
    request = functools.partial(
        build_request,
        model="claude-sonnet-5-5",
        max_tokens=100,
        system="You are Eva.",
        tools=[],
        view=view,
        note=note,
    )
    body = request(lifetimes=chosen)
    validate_request(body)  # longer lifetimes first: the fake refuses the other order, as the API
    ttls = [
        b["cache_control"].get("ttl", "5m")
        for m in body["messages"]
        for b in m["content"]
        if "cache_control" in b
    ]
    assert body["system"][0]["cache_control"]["ttl"] == "1h" and ttls == ["1h", "1h", "5m"]
    plain = request(lifetimes=ALL_FIVE_MINUTES)
    assert all("ttl" not in b.get("cache_control", {}) for m in plain["messages"] for b in m["content"])
