"""``python -m bench.scale``: the scale benchmark alone, as one JSON object (or a short table).

    python -m bench.scale --messages 1000000 --json
    python -m bench.scale --messages 100000 --database-url postgresql://user@host/postgres

A fresh database per run: on a throwaway embedded PostgreSQL, or created (and dropped) on
--database-url's server. Server defaults (synchronous_commit on): the figures are wall-clock.
What is measured and how: bench/scale_measure.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.logs import configure_logging
from bench.scale_ingest import ingest_through_bot
from bench.scale_measure import ScaleFigures, ScaleSpec, run_scale
from memory import EmbeddedPostgres

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "irc"
CORPUS = "ubuntu-stream-1.jsonl"


def summary(f: ScaleFigures) -> dict[str, Any]:
    """The figures by the names the acceptance of the scale work uses, then the detail."""
    lat = f.latencies
    small = lat.get("recall_small")
    return {
        "messages": f.messages,
        "prompt_p95_ms": lat["prompt"].p95_ms,
        "zoom_p95_ms": max(lat["zoom_row"].p95_ms, lat["zoom_deep"].p95_ms),
        "recall_p95_ms": lat["recall"].p95_ms,
        "recall_word_p95_ms": lat["recall_word"].p95_ms if "recall_word" in lat else None,
        "recall_author_p95_ms": lat["recall_author"].p95_ms,
        "recall_small_chat_p95_ms": small.p95_ms if small else None,
        "ingest_msgs_per_s": f.ingest_per_second,
        "erase_10k_s": f.erase_seconds,
        "detail": {
            "latencies_ms": {name: vars(value) for name, value in lat.items()},
            "ingest_messages": f.ingest_messages,
            "ingest_batch_mean": f.ingest_batch_mean,
            "append_one_per_transaction_msgs_per_s": f.append_per_second,
            "append_synchronous_commit_off_msgs_per_s": f.ingest_async_per_second,
            "commit_ms": f.commit_ms,
            "erase_messages": f.erase_messages,
            "erase_nodes": f.erase_nodes,
            "load_seconds": f.load_seconds,
            "tree_seconds": f.tree_seconds,
            "nodes": f.nodes,
            "row_lines": f.row_lines,
            "database_bytes": f.database_bytes,
            "table_bytes": f.table_bytes,
            "postgres_version": f.postgres_version,
            "corpus": f.corpus,
        },
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages in the big chat")
    parser.add_argument("--database-url", help="a PostgreSQL server to create the benchmark database on")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--samples", type=int, default=200, help="calls per latency figure")
    parser.add_argument("--ingest", type=int, default=5_000, help="messages per ingest figure")
    parser.add_argument("--corpus", type=Path, default=DATA / CORPUS)
    return parser.parse_args(argv)


async def run(args: argparse.Namespace) -> ScaleFigures:
    spec = ScaleSpec(args.corpus, messages=args.messages, samples=args.samples, ingest=args.ingest)
    if args.database_url:
        return await run_scale(spec, args.database_url, ingest_through_bot)
    server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="eva-scale-")), delete_on_stop=True)
    server.start(database="postgres")
    try:
        return await run_scale(spec, server.admin_url(), ingest_through_bot)
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging()  # stdout carries only the figures
    if not args.corpus.is_file():
        print(f"no corpus at {args.corpus}: pass --corpus", file=sys.stderr)
        return 2
    if args.messages < 1:
        print("--messages must be at least 1", file=sys.stderr)
        return 2
    figures = asyncio.run(run(args))
    result = summary(figures)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            if key != "detail":
                print(f"{key:26} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
