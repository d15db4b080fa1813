"""The "Proof of memory" section of docs/benchmarks.md: bench/fidelity.py's model-free figures on
every corpus (bench/report.py collects them), Eva's row beside the rolling summary.

Pure formatting of measured figures; the notes say what each measure is and where it is weak.
"""

from __future__ import annotations

from typing import Any

from bench.fidelity_measure import AGES
from bench.fidelity_plant import KINDS
from bench.fidelity_search import QUERY_RULE
from bench.markdown import table


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def _scope(run: dict[str, Any]) -> str:
    limit = run["limit"]
    return f"{run['corpus']} ({'whole' if limit is None else f'first {limit:,}'})"


def _hits(figures: dict[str, Any], name: str) -> str:
    return " / ".join(_pct(figures[f"{name}_hit_at_{k}"]) for k in (1, 5, 10))


def kinds_table(runs: list[dict[str, Any]]) -> str:
    rows = []
    for run in runs:
        for kind in KINDS:
            f = run["kinds"].get(kind)
            if f is None:
                continue
            steps = f["mean_zoom_steps"]
            rows.append(
                [
                    _scope(run),
                    kind,
                    str(f["probes"]),
                    _pct(f["reachable_share"]),
                    "-" if steps is None else f"{steps:.1f}",
                    _hits(f, "recall"),
                    _hits(f, "bm25"),
                    str(f.get("erased_found", "-")),
                ]
            )
    headers = [
        "corpus", "kind", "probes", "reachable by zoom from the row", "mean zoom steps",
        "recall hit@1 / @5 / @10", "BM25 hit@1 / @5 / @10", "erased facts found",
    ]  # fmt: skip
    return table(headers, rows)


def _bytes(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def resolution_table(runs: list[dict[str, Any]]) -> str:
    rows = []
    for run in runs:
        for age in AGES:
            r = run["resolution"][age]
            if not r["samples"]:
                continue
            row, rolling = r["row_bytes_per_message"], r["rolling_bytes_per_message"]
            ratio = f"{row / rolling:.1f}x" if row and rolling else "-"
            rows.append(
                [_scope(run), f"a {age} back", str(r["samples"]), _bytes(row), _bytes(rolling), ratio]
            )
    headers = [
        "corpus", "message", "probe times", "Eva's row: bytes read per message",
        "rolling summary: bytes read per message", "Eva / rolling",
    ]  # fmt: skip
    return table(headers, rows)


def _retrieval_note(main: dict[str, Any]) -> str:
    """What the retrieval figures say about `recall` against the baseline, from the figures."""
    kinds = [k for k in main["kinds"] if k != "erased"]
    recall = ", ".join(f"{k} {_pct(main['kinds'][k]['recall_hit_at_5'])}" for k in kinds)
    bm25 = ", ".join(f"{k} {_pct(main['kinds'][k]['bm25_hit_at_5'])}" for k in kinds)
    behind = sum(main["kinds"][k]["recall_hit_at_5"] for k in kinds) < sum(
        main["kinds"][k]["bm25_hit_at_5"] for k in kinds
    )
    said = (
        f"on `{main['corpus']}`, `recall` finds the planted message in its top 5 for {recall}; "
        f"BM25 over the same words for {bm25}."
    )
    if not behind:
        return f"Retrieval {said} `recall` is at least as good as the baseline."
    return (
        f"Weakness, with the figure: {said} A question in other words than the message misses "
        "where the search needs the message's own words; the model can still search the value's "
        "words or the person's name, as the tool description tells it (word for word)."
    )


def fidelity_section(runs: list[dict[str, Any]]) -> str:
    """The section's markdown; "" when the run measured no fidelity."""
    if not runs:
        return ""
    main = runs[0]
    seconds = sum(run["seconds"] for run in runs)
    return f"""## Proof of memory: planted facts (model-free)

`python -m bench.fidelity` (bench/fidelity.py) plants short facts in each corpus, by people active
in that stretch, at known positions (single, attribution, update: the newer value must win, about:
one person about another, erased: the author erases themselves later through the engine's erasure),
replays the corpus through the real engine and, at each probe's time, measures what a reply could
still reach. Questions paraphrase the fact. {sum(run["facts"] for run in runs)} probes in
{seconds / 60:,.1f} minutes of runs.

{kinds_table(runs)}

- Reachable: the planted message is reached from the row line over it by `zoom` (steps: zoom calls
  from the row; 0 = in the raw tail the reply reads anyway). 100% is required for every kind but
  erased, where 0% is (and "erased facts found": the value found by nothing, neither the row and
  tail nor `recall` with the question's words or the value itself nor any zoom: 0 required).
- Retrieval: `recall` (through `MemoryEngine.recall`) and a plain BM25 over the chat (speaker's name
  included, light stemming), both given {QUERY_RULE}; the planted message's rank.
- {_retrieval_note(main)}

### Resolution by age: what the reply model reads of one message

{resolution_table(runs)}

Bytes of memory a reply reads per message covered (its tail line, or its row line shared by the
messages the line covers; for the rolling summary, its tail line or the whole summary shared by
every message before the tail), for the message a day, a week, a month or a year before each probe's
time, averaged over the probe times that had one. Ages the corpus does not span are left out.
"""
