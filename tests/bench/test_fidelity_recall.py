"""bench.fidelity_recall: the recall part of the planted-fact benchmark alone, on a real slice."""

from __future__ import annotations

import itertools
from pathlib import Path

from bench.fidelity_plant import plant
from bench.fidelity_recall import measure
from memory import read_any


async def test_recall_figures_per_kind_and_no_erased_fact_returned(
    database_url: str, shared_data: Path
) -> None:
    records = list(itertools.islice(read_any(shared_data / "irc" / "ubuntu-meeting.jsonl"), 1500))
    planted = plant(records, 20, seed=1)
    figures = await measure(planted, database_url)
    assert set(figures["kinds"]) == {"single", "attribution", "update", "about"}
    assert sum(f["probes"] for f in figures["kinds"].values()) + figures["erased_probes"] == 20
    for f in figures["kinds"].values():
        for name in ("recall", "bm25"):
            at = [f[f"{name}_hit_at_{k}"] for k in (1, 5, 10)]
            assert 0 <= at[0] <= at[1] <= at[2] <= 1
    # An attribution question names the fact itself: both rankings find every one.
    assert figures["kinds"]["attribution"]["recall_hit_at_10"] == 1.0
    assert figures["erased_probes"] == 4 and figures["erased_found"] == 0  # erased before asked
