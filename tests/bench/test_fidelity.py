"""bench.fidelity on slices of real chat: the planted facts and their probes agree (checked
against the corpus itself, not the generator's bookkeeping), the model-free measures come out on
the real engine, an erased fact found anywhere fails the run, and the real-model mode runs end to
end against the Anthropic fake over HTTP (which proves the pipeline, not quality), stopping at
--max-usd."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench import fidelity
from bench.fidelity_model import PIPELINE_NOTE, judged
from bench.fidelity_plant import KINDS, Planted, Probe, normalise, plant
from bench.fidelity_search import Bm25, query_words
from memory import ImportedMessage, read_any
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import ToolCall
from tests.memory.helpers import SMALL


def _slice(shared_data: Path, limit: int, name: str = "rust.jsonl") -> list[ImportedMessage]:
    return list(itertools.islice(read_any(shared_data / "irc" / name), limit))


def _key(record: ImportedMessage) -> tuple[str, str, str]:
    return (record.author_name, record.content, record.created_at.isoformat())


def _added(original: list[ImportedMessage], merged: list[ImportedMessage]) -> list[int]:
    """Indexes of ``merged`` that are not messages of the corpus (a multiset difference)."""
    left = Counter(_key(r) for r in original)
    added = []
    for index, record in enumerate(merged):
        if left[_key(record)] > 0:
            left[_key(record)] -= 1
        else:
            added.append(index)
    return added


def _words(text: str) -> set[str]:
    return set(normalise(text).split())


def test_probes_match_their_planted_messages(shared_data: Path) -> None:
    original = _slice(shared_data, 2000)
    planted = plant(original, 25, seed=7)
    added = _added(original, planted.records)
    probes = planted.probes
    assert Counter(p.kind for p in probes) == {kind: 5 for kind in KINDS}
    updates = [p for p in probes if p.kind == "update"]
    # Every planted message is one probe's (an update has two), and nothing else was added.
    assert sorted(added) == sorted(
        [p.planted for p in probes] + [p.older for p in updates if p.older is not None]
    )
    erased_at = {name: after for after, people in planted.erasures.items() for _, name in people}
    for probe in probes:
        message = planted.records[probe.planted]
        text = message.content
        assert message.author_name == probe.author and probe.planted <= probe.ask_after < len(planted.records)
        # The author was active there: 3+ messages of the corpus within ~400 of the position
        # (found by the planted message's time: it takes the time of the message it precedes).
        position = next(k for k, r in enumerate(original) if r.created_at >= message.created_at)
        near = [r.author_name for r in original[max(0, position - 410) : position + 410]]
        assert near.count(probe.author) >= 3, probe
        value = probe.value
        assert f" {normalise(value)} " in f" {normalise(text)} ", probe
        if probe.kind == "attribution":  # the question names the value and asks who
            assert (
                probe.expected == probe.author and f" {normalise(value)} " in f" {normalise(probe.question)} "
            )
        else:
            assert probe.expected == value
        assert probe.credit == probe.author
        # A paraphrase: beyond the people and the value, the question's words are not the message's.
        shared = _words(" ".join(query_words(probe.question))) & _words(text)
        allowed = _words(value) | _words(probe.author) | _words(probe.subject or "")
        assert not shared - allowed, (probe.question, text)
        # The value is the planted message's alone: no message of the corpus says it.
        assert not any(f" {normalise(value)} " in f" {normalise(r.content)} " for r in original)
        if probe.kind == "update":
            assert probe.older is not None and probe.older < probe.planted
            first = planted.records[probe.older]
            assert first.author_name == probe.author
            assert f" {normalise(probe.expected)} " not in f" {normalise(first.content)} "
        if probe.kind == "about":
            assert probe.subject and probe.subject != probe.author and probe.subject in text
        if probe.kind == "erased":
            gone = erased_at[probe.author]
            assert probe.planted <= gone < probe.ask_after + 1
            assert not any(r.author_name == probe.author for r in planted.records[gone + 1 :])
        else:
            assert probe.author not in erased_at and probe.subject not in erased_at
    assert plant(original, 25, seed=7).probes == probes  # deterministic by seed
    assert plant(original, 25, seed=8).probes != probes


def test_query_rule_and_bm25() -> None:
    assert query_words("Where will Max's sibling tie the knot?") == ["max", "sibling", "tie", "knot"]
    index = Bm25()
    index.add(0, "max", "can't make it, my sister's wedding is in Borås")
    index.add(1, "ann", "the wedding cake was great")
    index.add(2, "bob", "ubuntu installs fine")
    assert index.rank(["max", "wedding"])[:2] == [0, 1]
    index.remove_author("max")
    assert index.rank(["max", "wedding"]) == [1]


def test_an_answer_is_judged_on_value_and_person() -> None:
    probe = Probe(
        "single", "Which city is max relocating to?", "Tromsø", "max", 5, 9, "max", "moving", "Tromsø"
    )
    assert judged(probe, "Max said they're moving to tromso next month.")
    assert not judged(probe, "Someone is moving to Tromsø.")  # nobody credited
    assert not judged(probe, "Max is moving to Oslo.")
    erased = Probe(
        "erased", "Which city is max relocating to?", "Tromsø", "max", 5, 9, "max", "moving", "Tromsø"
    )
    assert judged(erased, "I don't know.") and not judged(erased, "Tromsø, I think")


def _args(
    shared_data: Path,
    admin_url: str,
    *extra: str,
    limit: int = 700,
    facts: int = 10,
    name: str = "rust.jsonl",
) -> Any:
    corpus = shared_data / "irc" / name
    return fidelity.parse_args(
        [
            "--corpus",
            str(corpus),
            "--limit",
            str(limit),
            "--facts",
            str(facts),
            "--database-url",
            admin_url,
            *extra,
        ]
    )


async def test_model_free_measures_on_a_small_slice(postgres_admin_url: str, shared_data: Path) -> None:
    # ubuntu-meeting's first 700 messages span 27 hours: some probes see a message a day back.
    args = _args(shared_data, postgres_admin_url, name="ubuntu-meeting.jsonl")
    out = await fidelity.main_async(args, config=SMALL)
    assert out["facts"] == 10 and out["mismatched_planted"] == 0
    assert out["replay"]["invariant_violations"] == 0 and out["replay"]["swaps"] > 0
    assert set(out["kinds"]) == set(KINDS)
    for kind, figures in out["kinds"].items():
        for key in ("recall_hit_at_1", "recall_hit_at_5", "recall_hit_at_10", "bm25_hit_at_10"):
            assert 0.0 <= figures[key] <= 1.0
        if kind != "erased":
            assert figures["reachable_share"] == 1.0, (kind, figures)
            assert figures["mean_zoom_steps"] is not None
    # Some planted message is under the row, not in the tail: zoom had to walk down to it.
    assert max(f["mean_zoom_steps"] for k, f in out["kinds"].items() if k != "erased") >= 1
    assert out["kinds"]["erased"]["erased_found"] == 0 and out["erased_found"] == 0
    assert out["kinds"]["erased"]["reachable_share"] == 0.0
    assert out["kinds"]["attribution"]["bm25_hit_at_10"] > 0  # the value is a rare word
    sampled = [age for age in out["resolution"].values() if age["samples"]]
    assert sampled, out["resolution"]
    assert all(age["row_bytes_per_message"] > 0 and age["rolling_bytes_per_message"] > 0 for age in sampled)
    assert out["estimate"]["total_usd"] > 0 and fidelity.problems(out) == []


def test_an_erased_fact_found_fails_the_run(
    postgres_admin_url: str,
    shared_data: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without the erasure, the erased person's facts are still in the memory: the run must say
    so and exit 1 (the check is the guarantee; this removes what it checks)."""

    def without_erasure(records: list[ImportedMessage], facts: int, seed: int = 1) -> Planted:
        planted = plant(records, facts, seed)
        planted.erasures = {}
        return planted

    monkeypatch.setattr(fidelity, "plant", without_erasure)
    rc = fidelity.main(
        [
            "--corpus",
            str(shared_data / "irc" / "rust.jsonl"),
            "--limit",
            "500",
            "--facts",
            "5",
            "--database-url",
            postgres_admin_url,
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 1
    assert re.search(r"FAILED: 1 erased facts found", captured.err), captured.err


def _requests(fake: FakeAnthropic, kind: str) -> int:
    return len([e for e in fake.requests(kind) if e.status == 200])


async def test_real_model_mode_end_to_end_against_the_fake(
    postgres_admin_url: str, shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with FakeAnthropic() as fake:
        fake.replier.tool_plan = [ToolCall("recall", {"query": "wedding"})]
        args = _args(
            shared_data, postgres_admin_url, "--model-url", fake.base_url, "--api-key", "test", facts=5
        )
        out = await fidelity.main_async(args, config=SMALL)
        compact_calls = _requests(fake, "compact")
    announced = capsys.readouterr().err
    assert "estimated cost: $" in announced and "proves the pipeline, not quality" in announced
    real = out["real_model"]
    assert real["note"] == PIPELINE_NOTE and real["stopped_at_max_usd"] is None
    assert real["probes_asked"] == 5 and set(real["eva"]) == set(KINDS)
    for kind in KINDS:
        eva, rolling = real["eva"][kind], real["rolling_summary"][kind]
        assert eva["asked"] == rolling["asked"] == 1 and eva["failed_turns"] == 0
        assert eva["recalled_share"] == 1.0 and rolling["mean_tool_calls"] == 0  # the baseline has no tools
    # The fake's replies hold no planted value: right only where nothing may be found.
    assert real["eva"]["erased"]["accuracy"] == 1.0 and real["eva"]["single"]["accuracy"] == 0.0
    assert real["compactor_calls"] > 0 and compact_calls == real["compactor_calls"]
    assert real["cost_usd"]["total"] > 0 and real["cost_usd"]["compaction"] > 0
    assert real["cost_usd"]["eva_turns"] > 0 and real["cost_usd"]["rolling_summary_turns"] > 0
    assert real["model_free_on_this_tree"]["erased"]["erased_found"] == 0


async def test_real_model_mode_stops_at_max_usd(postgres_admin_url: str, shared_data: Path) -> None:
    async with FakeAnthropic() as fake:
        args = _args(
            shared_data,
            postgres_admin_url,
            "--model-url",
            fake.base_url,
            "--api-key",
            "test",
            "--max-usd",
            "0.0001",
        )
        out = await fidelity.main_async(args, config=SMALL)
        sent = _requests(fake, "compact") + _requests(fake, "reply")
    real = out["real_model"]
    assert real["stopped_at_max_usd"] and "--max-usd 0.0001" in real["stopped_at_max_usd"]
    assert real["probes_asked"] < out["facts"]
    # It stopped at the first check past the limit: the spend is over it by at most one step.
    assert 0.0001 <= real["cost_usd"]["total"] < 0.01
    assert sent <= real["compactor_calls"] + 3 * real["probes_asked"] + 2
