"""The benchmark report's machinery on a tiny slice of real chat: every run, the baseline and
the scale chat produce figures, and the rendered report has every table filled with numbers
(every table of docs/benchmarks.md). Small sizes (tests/memory/helpers.SMALL) so a few hundred
messages reach batches, swaps and rewrites."""

from __future__ import annotations

import pickle
import re
from dataclasses import replace
from pathlib import Path

from bench.fidelity import FidelitySpec
from bench.figures import Plan
from bench.render import kept_sections, render
from bench.report import collect
from bench.scale import summary
from bench.scale_measure import ScaleSpec
from tests.memory.helpers import SMALL

HOST = {"commit": "abc123", "cpus": "2", "memory": "1.0 GiB", "python": "3.11", "load": "0.10"}
NUMBER = re.compile(r"\d")
SCALE_KEYS = (
    "messages",
    "prompt_p95_ms",
    "zoom_p95_ms",
    "recall_p95_ms",
    "recall_author_p95_ms",
    "recall_small_chat_p95_ms",
    "ingest_msgs_per_s",
    "erase_10k_s",
)


def tables(markdown: str) -> list[list[list[str]]]:
    """Each markdown table as rows of cells (header and separator left out)."""
    found: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            current.append([cell.strip() for cell in line.strip("|").split("|")])
        elif current:
            found.append(current[2:])
            current = []
    return found


async def test_report_renders_every_table_from_measurement(
    postgres_admin_url: str, shared_data: Path
) -> None:
    irc = shared_data / "irc"
    scale = ScaleSpec(irc / "rust.jsonl", messages=3_000, samples=8, ingest=40, erase=100, config=SMALL)
    config = replace(SMALL, trim_slack=48)  # as the product: overshoots cut here
    # ubuntu-meeting's first 700 messages span 27 hours: the resolution table gets a row.
    fidelity = (FidelitySpec(irc / "ubuntu-meeting.jsonl", 700, 10),)
    plan = Plan(
        "test",
        irc / "rust.jsonl",
        500,
        (irc / "stripe.jsonl",),
        300,
        scale,
        config,
        every_turn_limit=120,
        fidelity=fidelity,
    )
    collected = await collect(plan, postgres_admin_url, workers=1)

    quiet, at_once, every, other, *before = collected.runs
    assert [b.corpus for b in before] == [quiet.corpus, other.corpus]  # every corpus, before/after
    assert all(b.replay["context_violations"] == 0 for b in [quiet, at_once, every, other, *before])
    # The before runs send each overshoot back (a second request); the after runs cut it here.
    assert before[0].replay["model_calls"] > before[0].replay["summarize_calls"]
    assert quiet.replay["model_calls"] == quiet.replay["summarize_calls"]
    assert quiet.messages == at_once.messages == 500 and other.messages == 300
    assert every.turns == every.messages == 120  # a turn at every message
    assert quiet.replay["invariant_violations"] == 0 and at_once.replay["invariant_violations"] == 0
    assert quiet.turns > 5 and quiet.turns == at_once.turns  # the same sample on the same messages
    assert quiet.replies["1h"].requests == quiet.replies["5m"].requests
    haiku = quiet.compaction["claude-haiku-4-5"]
    assert haiku.requests == quiet.replay["model_calls"] > 0  # every billed request priced
    blocked = quiet.compaction["claude-haiku-4-5, context in 4-line blocks (what-if)"]
    # The same text in more blocks: only the per-block rounding of the token estimate differs.
    assert blocked.requests == haiku.requests
    assert abs(blocked.prompt_tokens - haiku.prompt_tokens) <= 0.02 * haiku.prompt_tokens
    assert haiku.cost_usd > 0 and 0 < quiet.replies["5m"].read_share < 1
    assert quiet.rolling is not None and quiet.rolling["rewrites"] >= 3
    assert collected.scale.latencies["prompt"].samples == 8
    assert collected.scale.erase_messages == 100 and collected.scale.ingest_per_second > 0
    assert collected.scale.row_lines > 0 and collected.scale.database_bytes > 0
    assert collected.scale.latencies["recall_small"].samples == 8  # the small chat beside the big one
    assert collected.scale.ingest_batch_mean >= 1 and collected.scale.append_per_second > 0
    figures = summary(collected.scale)
    for key in SCALE_KEYS:  # python -m bench.scale --json: every figure the scale goals name
        assert isinstance(figures[key], int | float) and figures[key] > 0, key

    (checked,) = collected.fidelity  # the planted facts, on the engine as configured
    assert checked["facts"] == 10 and checked["erased_found"] == 0
    assert all(f["reachable_share"] == 1.0 for kind, f in checked["kinds"].items() if kind != "erased")

    # The figures cross from the report's worker processes and go to --save pickled.
    assert pickle.loads(pickle.dumps(collected)).runs[0].label == collected.runs[0].label
    markdown = render(collected, HOST, "python -m bench.report --test")
    found = tables(markdown)
    # reference, per corpus, headline, before/after, comparison, fidelity by kind, by age, scale
    assert len(found) == 8
    by_kind = found[5]
    assert [row[1] for row in by_kind] == ["single", "attribution", "update", "about", "erased"]
    assert by_kind[-1][-1] == "0" and all(row[3] == "100%" for row in by_kind[:-1])
    assert found[6] and all(row[0].startswith("ubuntu-meeting.jsonl") for row in found[6])
    assert "## Proof of memory" in markdown
    for table in found:
        assert table, "a table without rows"
        for row in table:
            assert NUMBER.search(" ".join(row[1:])), f"a row without figures: {row}"
    for placeholder in ("TODO", "nan", "None", "{", "}", "XX"):
        assert placeholder not in markdown, placeholder
    assert "0.092" in markdown and "98.6%" in markdown  # the references sit next to the measurements


async def test_swap_at_once_swaps_at_least_as_often(postgres_admin_url: str, shared_data: Path) -> None:
    """The swap-policy knob is real: with QUIET = 0 a staged row never waits for a quiet chat."""
    irc = shared_data / "irc"
    scale = ScaleSpec(irc / "rust.jsonl", messages=500, samples=2, ingest=5, erase=10, config=SMALL)
    plan = Plan("test", irc / "rust.jsonl", 400, (), None, scale, replace(SMALL, quiet_seconds=3600), 50)
    collected = await collect(plan, postgres_admin_url, workers=1)
    quiet, at_once, *_ = collected.runs  # then the every-turn run and the before run
    assert at_once.replay["forced_swaps"] == 0
    assert at_once.replay["swaps"] > quiet.replay["swaps"]


def test_the_report_keeps_the_sections_other_commands_measured_and_rewrites_its_own() -> None:
    previous = "\n".join(
        [
            "# Benchmarks",
            "## One chat at scale",
            "old scale figures",
            "## Proof of memory (`python -m bench.fidelity`, recall part)",
            "old fidelity figures",
            "## Compaction speed after an import (`python -m bench.compact_speed`)",
            "| messages | per second |",
            "## Command start-up (`python -m bench.cli_startup --runs 5`)",
            "0.30 s",
            "## How these figures are made",
            "old notes",
        ]
    )
    kept = kept_sections(previous)
    assert kept.endswith("0.30 s\n\n")  # a blank line before the next heading
    assert kept.rstrip("\n").splitlines() == [
        "## Compaction speed after an import (`python -m bench.compact_speed`)",
        "| messages | per second |",
        "## Command start-up (`python -m bench.cli_startup --runs 5`)",
        "0.30 s",
    ]
    assert kept_sections("# Benchmarks\n## One chat at scale\nfigures\n") == ""
