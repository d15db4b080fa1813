"""Proof of memory: plant facts in a real chat, replay it through the engine, ask for them later.

    python -m bench.fidelity --corpus PATH/TO/rust.jsonl --facts 50 --json
    python -m bench.fidelity --corpus export.json --real-model --max-usd 2   # with a real model

The planted facts (bench/fidelity_plant.py: single, attribution, update, about, erased) go into
the corpus at known positions, by people active there; the corpus is replayed through the real
log and compactor on a fresh PostgreSQL (bench/replay_loop.py, the fake summarizer), and at each
probe's time the model-free measures are taken on the real engine (bench/fidelity_measure.py):
reachability by zoom from the row, `recall` with the question's words beside a plain BM25
(bench/fidelity_search.py), bytes read per message by age against the rolling summary, and the
erased facts found by nothing. It exits 1 when a non-erased fact is unreachable or an erased one
is found anywhere.

With ``--real-model`` (or ``--model-url`` / ``--api-key``; defaults: ANTHROPIC_BASE_URL and
ANTHROPIC_API_KEY from the environment), the same corpus is replayed again with the Anthropic
compactor at COMPACT_MODEL, and each probe is asked as a real reply turn with zoom and recall
(bench/fidelity_model.py), and of a real rolling summary on the same model. The run states its
estimated cost first (from the model-free run's metered requests) and stops at ``--max-usd``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.fidelity_measure import ESTIMATED_TURN_FACTOR, FidelityHooks, kind_figures
from bench.fidelity_model import BudgetReached, RealModel, real_model_run
from bench.fidelity_plant import Planted, plant
from bench.fidelity_search import QUERY_RULE
from bench.logs import configure_logging
from bench.meters import REPLY_MODEL, compact_model
from bench.replay_loop import replay
from memory import MemoryConfig, fresh_database, read_any

DEFAULT_FACTS = 200
DEFAULT_MAX_USD = 5.0


@dataclass(frozen=True)
class FidelitySpec:
    """One model-free fidelity run of the report (bench/report.py): a corpus, how much of it, how
    many facts."""

    corpus: Path
    limit: int | None
    facts: int
    seed: int = 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.fidelity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="JSONL or DiscordChatExporter JSON")
    parser.add_argument("--limit", type=int, help="the first N messages of the corpus")
    parser.add_argument("--facts", type=int, default=DEFAULT_FACTS, help="planted facts (kinds in turn)")
    parser.add_argument("--seed", type=int, default=1, help="the generator's seed")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--database-url", help="a PostgreSQL server to create the replay databases on")
    real = parser.add_argument_group("real-model mode")
    real.add_argument("--real-model", action="store_true", help="also ask a real model (see below)")
    real.add_argument("--model-url", help="Anthropic-compatible API (default: ANTHROPIC_BASE_URL)")
    real.add_argument("--api-key", help="its key (default: ANTHROPIC_API_KEY)")
    real.add_argument("--reply-model", default=os.environ.get("REPLY_MODEL") or REPLY_MODEL)
    real.add_argument("--compact-model", default=compact_model())
    real.add_argument("--max-usd", type=float, default=DEFAULT_MAX_USD, help="stop when this much is spent")
    args = parser.parse_args(argv)
    args.real_model = args.real_model or args.model_url is not None or args.api_key is not None
    return args


def read_slice(corpus: Path, limit: int | None) -> list[Any]:
    return list(itertools.islice(read_any(corpus), limit))


async def model_free_run(planted: Planted, corpus: Path, url: str, config: MemoryConfig) -> dict[str, Any]:
    """The replay with the fake summarizer and the model-free measures."""
    hooks = FidelityHooks(planted, config)
    result = await replay(corpus, database_url=url, config=config, hooks=hooks, records=planted.records)
    kinds = kind_figures(hooks.results)
    turns = hooks.turn_meter.meters["5m"].totals.cost_usd * ESTIMATED_TURN_FACTOR
    rolling_turns = hooks.rolling.replies.meters["5m"].totals.cost_usd
    compaction = hooks.compact_meter.totals.cost_usd
    rewrites = sum(m.totals.cost_usd for m in hooks.rolling.meters if m.model == hooks.compact_meter.model)
    estimate: dict[str, Any] = {
        "total_usd": round(compaction + turns + rewrites + rolling_turns, 4),
        "compaction_usd": round(compaction, 4),
        "compact_model": hooks.compact_meter.model,
        "reply_turns_usd": round(turns, 4),
        "reply_model": REPLY_MODEL,
        "rolling_summary_usd": round(rewrites + rolling_turns, 4),
        "assumed": f"an Eva turn costs {ESTIMATED_TURN_FACTOR}x its first call (two tool steps read "
        "from the cache), a rolling-summary turn one call, 150 output tokens a call, the prompt "
        "cache simulated on corpus time",
    }
    return {
        "kinds": kinds,
        "erased_found": sum(k.get("erased_found", 0) for k in kinds.values()),
        "resolution": hooks.resolution.figures(),
        "mismatched_planted": hooks.mismatched,
        "replay": {
            key: result.as_json()[key]
            for key in ("messages", "swaps", "invariant_violations", "context_violations", "seconds")
        },
        "estimate": estimate,
    }


async def measure_fidelity(spec: FidelitySpec, url: str, config: MemoryConfig) -> dict[str, Any]:
    """The model-free figures of one run on the database at ``url`` (the report's runs)."""
    started = time.perf_counter()
    planted = plant(read_slice(spec.corpus, spec.limit), spec.facts, spec.seed)
    figures = await model_free_run(planted, spec.corpus, url, config)
    return {
        "corpus": spec.corpus.name,
        "limit": spec.limit,
        "facts": len(planted.probes),
        "seed": spec.seed,
        **figures,
        "seconds": round(time.perf_counter() - started, 1),
    }


def problems(figures: dict[str, Any]) -> list[str]:
    """Why the run fails: a fact the row cannot reach, an erased one found, a broken replay."""
    found = [
        f"{kind}: reachable share {f['reachable_share']} (1.0 required)"
        for kind, f in figures["kinds"].items()
        if kind != "erased" and f["reachable_share"] < 1.0
    ]
    if figures["erased_found"]:
        found.append(f"{figures['erased_found']} erased facts found (0 required)")
    if figures["mismatched_planted"]:
        found.append(f"{figures['mismatched_planted']} planted messages logged at another index")
    if figures["replay"]["invariant_violations"] or figures["replay"]["context_violations"]:
        found.append("the replay broke the row's invariants")
    real = figures.get("real_model", {}).get("model_free_on_this_tree", {})
    if real.get("erased", {}).get("erased_found"):
        found.append(
            f"{real['erased']['erased_found']} erased facts found on the real model's tree (0 required)"
        )
    return found


async def main_async(args: argparse.Namespace, config: MemoryConfig | None = None) -> dict[str, Any]:
    """Every figure of one run; ``config``: the engine's sizes (tests use small ones)."""
    started = time.perf_counter()
    planted = plant(read_slice(args.corpus, args.limit), args.facts, args.seed)
    config = config or MemoryConfig()
    url, server = await fresh_database(args.database_url)
    try:
        figures = await model_free_run(planted, args.corpus, url, config)
        out: dict[str, Any] = {
            "corpus": args.corpus.name,
            "limit": args.limit,
            "facts": len(planted.probes),
            "seed": args.seed,
            "query_rule": QUERY_RULE,
            **figures,
        }
        if args.real_model:
            model = RealModel.from_args(args)
            print(model.announce(figures["estimate"]), file=sys.stderr)
            real_url, real_server = await fresh_database(args.database_url)
            try:
                out["real_model"] = await real_model_run(planted, args.corpus, real_url, config, model)
            finally:
                if real_server is not None:
                    real_server.stop()
    finally:
        if server is not None:
            server.stop()
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging()  # stdout carries only the figures
    if not args.corpus.is_file():
        print(f"no such corpus: {args.corpus}", file=sys.stderr)
        return 2
    if args.facts < 5:
        print("--facts must be at least 5 (one of each kind)", file=sys.stderr)
        return 2
    if args.real_model and not (args.api_key or os.environ.get("ANTHROPIC_API_KEY")):
        print("the real-model mode needs --api-key or ANTHROPIC_API_KEY", file=sys.stderr)
        return 2
    figures = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key}: {value}")
    failed = problems(figures)
    for line in failed:
        print(f"FAILED: {line}", file=sys.stderr)
    return 1 if failed else 0


__all__ = ["BudgetReached", "main"]

if __name__ == "__main__":
    sys.exit(main())
