"""Replay a chat corpus through the real memory engine and print what it cost.

    python -m bench.replay --corpus PATH/TO/ubuntu-meeting.jsonl --json
    python -m bench.replay --corpus PATH/TO/ubuntu-meeting.jsonl --json --turns --timeline friends

Each message is appended through the real log on a real PostgreSQL (a fresh embedded
server unless --database-url), with simulated time taken from the message's date, and the
compactor runs with the deterministic fake summarizer (its size model is printed with the
figures, since every calls-per-message figure depends on it). The invariants of the row are
checked after every swap (bench/replay_loop.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bench.baselines import CACHE_LIFETIMES
from bench.logs import configure_logging
from bench.meters import compact_model
from bench.turns import FRIENDS_TIMELINE, IRC, RunSpec, headline, measure_run
from memory import MemoryConfig, fresh_database
from memory.fakes.summarizer import MEASURED_OVERSHOOT_RATE


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="JSONL or DiscordChatExporter JSON")
    parser.add_argument("--limit", type=int, help="replay only the first N messages")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--database-url", help="a PostgreSQL server to create the replay database on")
    parser.add_argument("--fail-rate", type=float, default=0.0, help="share of summarizer calls that fail")
    parser.add_argument(
        "--overshoot-rate",
        type=float,
        default=MEASURED_OVERSHOOT_RATE,  # the report's setting: figures here and there agree
        help="share of first tries that overshoot the 512-byte limit (default: the measured 0.1)",
    )
    parser.add_argument("--tasks-per-call", type=int, default=MemoryConfig().tasks_per_call)
    parser.add_argument(
        "--turns",
        action="store_true",
        help="also reply turns (with and without tool steps) and the rolling-summary baseline",
    )
    parser.add_argument(
        "--timeline",
        choices=(IRC, FRIENDS_TIMELINE),
        default=IRC,
        help="irc: the corpus's own dates; friends: re-timed as a friend group talks (bursts, "
        "1 message in 15 a reply, the first 30 days not counted: bench/friend_timeline.py)",
    )
    return parser.parse_args(argv)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    url, server = await fresh_database(args.database_url)
    try:
        spec = RunSpec(
            args.corpus,
            "replay",
            args.limit,
            MemoryConfig(tasks_per_call=args.tasks_per_call),
            ttls=CACHE_LIFETIMES if args.turns else ("5m",),
            rolling=args.turns,
            overshoot_rate=args.overshoot_rate,
            turns=args.turns,
            fail_rate=args.fail_rate,
            timeline=args.timeline,
            tool_steps=args.turns,
        )
        run = await measure_run(spec, url)
    finally:
        if server is not None:
            server.stop()
    return {**run.replay, **headline(run, compact_model())}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging()  # stdout carries only the figures
    if not args.corpus.is_file():
        print(f"no such corpus: {args.corpus}", file=sys.stderr)
        return 2
    figures = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key}: {value}")
    ok = figures["invariant_violations"] == 0 and figures["context_violations"] == 0 and figures["converged"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
