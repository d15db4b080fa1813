"""The recall part of bench/fidelity.py alone, in a minute instead of half an hour: the same
planted run, each message appended in order through the real log, each erasure at its place,
each probe's question words asked of `recall` and of the plain BM25 after its message. No
compactor: recall reads only the messages, so the tree would change nothing here.

    python -m bench.fidelity_recall --corpus PATH/TO/stripe.jsonl --facts 200 --json

Prints, per kind, recall's and BM25's hit@1/5/10 of the planted message (the same ranks as
bench.fidelity's ``recall_hit_at_k`` / ``bm25_hit_at_k``), and for the erased facts how many
recall still returned (their value or their question's words): 0 required, exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.fidelity import read_slice
from bench.fidelity_measure import HIT_RANKS, rank_of, recall_indexes, words_only
from bench.fidelity_plant import KINDS, Planted, Probe, contains, plant
from bench.fidelity_search import Bm25, query_words
from bench.logs import configure_logging
from bench.replay_loop import author_id_of
from memory import (
    ChatKey,
    MemoryConfig,
    build,
    fresh_database,
    from_import,
    make_engine,
    make_sessions,
    migrate,
)
from memory.clock import SimulatedClock


async def measure(planted: Planted, url: str) -> dict[str, Any]:
    """Per kind: probes, recall and BM25 hit@k; erased facts recall still returned."""
    engine = make_engine(url)
    await migrate.upgrade(engine)
    clock = SimulatedClock()
    memory = build(make_sessions(engine), MemoryConfig(), clock=clock)
    due: dict[int, list[Probe]] = defaultdict(list)
    for probe in planted.probes:
        due[probe.ask_after].append(probe)
    bm25 = Bm25()
    ranks: dict[str, list[tuple[int | None, int | None]]] = defaultdict(list)
    erased_found = 0
    try:
        chat = await memory.ensure_chat(ChatKey(kind="imported", name="fidelity-recall"))
        for record in planted.records:
            clock.set(record.created_at)
            new = replace(from_import(record, None), snowflake=None, edited_at=None)
            if new.author_id is None:
                new = replace(new, author_id=author_id_of(new.author_name))
            index = await memory.append(chat, new)
            assert index is not None
            bm25.add(index, record.author_name, record.content)
            for author_id, name in planted.erasures.get(index, []):
                await memory.erase_author_everywhere(author_id)
                bm25.remove_author(name)
            for probe in due.get(index, []):
                words = query_words(probe.question)
                found, text = await recall_indexes(memory, chat, " ".join(words))
                ranks[probe.kind].append(
                    (rank_of(found, probe.planted), rank_of(bm25.rank(words), probe.planted))
                )
                if probe.kind == "erased":
                    _, by_value = await recall_indexes(memory, chat, probe.expected, limit=20)
                    seen = words_only(text) + "\n" + words_only(by_value)
                    erased_found += contains(seen, probe.value)
    finally:
        await engine.dispose()
    kinds: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        pairs = ranks.get(kind, [])
        if not pairs or kind == "erased":
            continue
        figures: dict[str, Any] = {"probes": len(pairs)}
        for name, column in (("recall", 0), ("bm25", 1)):
            for k in HIT_RANKS:
                hits = sum(1 for rank in (pair[column] for pair in pairs) if rank is not None and rank <= k)
                figures[f"{name}_hit_at_{k}"] = round(hits / len(pairs), 4)
        kinds[kind] = figures
    return {"kinds": kinds, "erased_probes": len(ranks.get("erased", [])), "erased_found": erased_found}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    planted = plant(read_slice(args.corpus, args.limit), args.facts, args.seed)
    url, server = await fresh_database(args.database_url, "eva_fidelity_recall")
    try:
        figures = await measure(planted, url)
    finally:
        if server is not None:
            server.stop()
    return {"corpus": args.corpus.name, "limit": args.limit, "facts": len(planted.probes), "seed": args.seed,
            **figures}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fidelity_recall", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--corpus", type=Path, required=True, help="JSONL or DiscordChatExporter JSON")
    parser.add_argument("--limit", type=int, help="the first N messages of the corpus")
    parser.add_argument("--facts", type=int, default=200, help="planted facts (kinds in turn)")
    parser.add_argument("--seed", type=int, default=1, help="the generator's seed")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--database-url", help="a PostgreSQL server to create the database on")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging()
    if not args.corpus.is_file():
        print(f"no corpus at {args.corpus}", file=sys.stderr)
        return 2
    figures = asyncio.run(run(args))
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for kind, f in figures["kinds"].items():
            hits = f"recall hit@5 {f['recall_hit_at_5']:.3f}, BM25 {f['bm25_hit_at_5']:.3f}"
            print(f"{kind}: {hits} ({f['probes']} probes)")
        print(f"erased facts recall returned: {figures['erased_found']} of {figures['erased_probes']}")
    return 1 if figures["erased_found"] else 0


if __name__ == "__main__":
    sys.exit(main())
