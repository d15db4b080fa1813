"""The reply-cost figures of a replay on the friend-group timeline: turns counted after the
warm-up only, the bill by cause adding up, tool steps priced on top, both cache-read prices and
the month of a server; and the section bench.reply_cost writes."""

from __future__ import annotations

import itertools
from pathlib import Path

from bench.friend_timeline import counted_from, retimed
from bench.meters import AUTO, compact_model
from bench.reply_cost import HEADING, render, with_section
from bench.tool_steps import steps_for
from bench.turns import FRIENDS_TIMELINE, ReplySampler, RunSpec, headline, measure_run
from memory import read_any
from memory.storage.database import create_database, drop_database, with_database
from tests.memory.helpers import SMALL

MESSAGES = 450  # 4.5 days: the first two are warm-up


async def _friends_run(admin_url: str, corpus: Path) -> dict[str, object]:
    await create_database(admin_url, "eva_reply_cost")
    try:
        spec = RunSpec(
            corpus,
            "friends",
            MESSAGES,
            SMALL,
            ttls=(AUTO,),
            rolling=True,
            timeline=FRIENDS_TIMELINE,
            tool_steps=True,
        )
        run = await measure_run(spec, with_database(admin_url, "eva_reply_cost"))
    finally:
        await drop_database(admin_url, "eva_reply_cost")
    return {**run.replay, **headline(run, compact_model())}


async def test_a_friend_group_replay_prices_its_turns_by_cause_with_tools_and_by_the_month(
    postgres_admin_url: str, shared_data: Path
) -> None:
    corpus = shared_data / "irc" / "rust.jsonl"
    out = await _friends_run(postgres_admin_url, corpus)
    assert out["timeline"] == FRIENDS_TIMELINE and out["invariant_violations"] == 0
    # The counted turns: the sampled messages dated after the warm-up (two days of 4.5).
    timed = retimed(list(itertools.islice(read_any(corpus), MESSAGES)))
    start = counted_from(MESSAGES)
    sampler = ReplySampler(None, 15)
    counted = [i for i, r in enumerate(timed) if sampler.wants(i, r) and r.created_at >= start]
    assert out["reply_turns"] == len(counted) > 0
    assert 0.4 * MESSAGES / 15 < len(counted) < 0.8 * MESSAGES / 15
    causes = out["reply_usd_by_cause"]
    assert isinstance(causes, dict)
    assert sum(c["turns"] for c in causes.values()) == len(counted)
    assert abs(sum(c["usd_per_turn"] for c in causes.values()) - out["reply_usd_per_turn"]) < 1e-4  # type: ignore[operator]
    assert "gap over an hour" in causes  # bursts hours apart: some turns find every mark gone
    assert (
        abs(
            sum(c["usd_per_turn"] for c in out["rolling_summary_usd_by_cause"].values())
            - out["rolling_summary_usd_per_turn"]
        )
        < 1e-4
    )  # type: ignore[union-attr,operator]
    # Tool steps: only turns that take one cost more, so the figure moves with them.
    assert any(steps_for(i) for i in counted)
    assert out["reply_usd_per_turn_with_tools"] > out["reply_usd_per_turn"]  # type: ignore[operator]
    assert out["reply_usd_per_turn_if_cache_read_0_20"] > out["reply_usd_per_turn"]  # type: ignore[operator]
    # The month: 30 days of 300 messages' compaction and 20 replies.
    per_message = float(out["compaction_and_cards_usd_per_1k_messages"]) / 1000  # type: ignore[arg-type]
    month = 30 * (300 * per_message + 20 * float(out["reply_usd_per_turn"]))  # type: ignore[arg-type]
    assert abs(float(out["month_usd"]) - month) < 0.05  # type: ignore[arg-type]
    assert 0 < float(out["month_usd_haiku_5_5_replies"]) < float(out["month_usd"])  # type: ignore[arg-type]

    host = {"commit": "abc", "cpus": "2", "load": "0.1"}
    section = render([out], host, "python -m bench.reply_cost", 1.0)
    assert section.startswith(HEADING) and "a month with Haiku 5.5 replies" in section
    document = "# Benchmarks\n\n## One\n\ntext\n\n## How these figures are made\n\nhow\n"
    once = with_section(document, section)
    assert once.index(HEADING) < once.index("## How these figures are made")
    assert with_section(once, section.replace("abc", "def")).count(HEADING) == 1
    assert "def" in with_section(once, section.replace("abc", "def"))
