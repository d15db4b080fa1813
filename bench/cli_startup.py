"""How long `eva` takes to answer before it does any work (docs/benchmarks.md).

Each command runs as its own process, as a host types it: `eva --help` (the parser alone) and
`eva stats` (settings, the imports a command needs, one database connection and one query, on
an empty database of a server started once for the run, so that PostgreSQL's own start is not
counted). With ``--against REF`` the same commands run on a checkout of REF (a git worktree in
a temporary folder, with this interpreter), interleaved with this checkout's runs so that a
busy machine slows both alike; the figure is the median of ``--runs`` runs, and the ratio
comes from one invocation.

    .venv/bin/python -m bench.cli_startup [--runs 7] [--against REF] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.compact_speed import REPO, checkout
from memory import fresh_database

COMMANDS = {"eva --help": ["--help"], "eva stats": ["stats"]}
SETTINGS = ("DATABASE_URL", "ANTHROPIC_", "DISCORD_", "DATA_DIR", "LOG_", "PYTHONPATH")


def run_once(tree: Path, args: list[str], database_url: str, folder: Path) -> float:
    """Wall seconds of one `eva` process of checkout ``tree``; a failure ends the benchmark."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(SETTINGS)}
    env |= {"DATABASE_URL": database_url, "DATA_DIR": str(folder / "data"), "LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(tree)}  # fmt: skip
    started = time.perf_counter()
    # cwd: an empty folder, so that no .env of the developer's is read.
    done = subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=folder, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"eva {' '.join(args)} failed in {tree} ({done.returncode}): {done.stderr[-400:]}")
    return seconds


def measure(trees: dict[str, Path], runs: int, database_url: str) -> dict[str, dict[str, float]]:
    """Median seconds per tree and command; the trees take turns on every run."""
    seconds: dict[str, dict[str, list[float]]] = {label: {c: [] for c in COMMANDS} for label in trees}
    with tempfile.TemporaryDirectory(prefix="eva-cli-startup-") as folder:
        for _ in range(runs):
            for label, tree in trees.items():
                for command, args in COMMANDS.items():
                    seconds[label][command].append(run_once(tree, args, database_url, Path(folder)))
    return {
        label: {command: round(statistics.median(times), 3) for command, times in by_command.items()}
        for label, by_command in seconds.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cli_startup", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--runs", type=int, default=7, help="runs per command and checkout (the median)")
    parser.add_argument("--against", metavar="REF", help="measure this git ref too, interleaved")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args(argv)
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")

    database_url, server = asyncio.run(fresh_database(None, prefix="eva_cli_startup"))
    try:
        trees = {"this checkout": REPO}
        if args.against:
            with checkout(args.against) as tree:
                figures = measure(trees | {args.against: tree}, args.runs, database_url)
        else:
            figures = measure(trees, args.runs, database_url)
    finally:
        if server is not None:
            server.stop()  # deletes the server's data, not the folder made for it
            shutil.rmtree(server.pgdata.parent, ignore_errors=True)

    ratios = {}
    if args.against:
        ratios = {c: round(figures[args.against][c] / figures["this checkout"][c], 1) for c in COMMANDS}
    if args.json:
        print(json.dumps({"runs": args.runs, "median_seconds": figures, "times_faster": ratios}, indent=2))
        return
    for label, by_command in figures.items():
        shown = ", ".join(f"{command} {value:.2f} s" for command, value in by_command.items())
        print(f"{label}: {shown} (median of {args.runs})")
    for command, ratio in ratios.items():
        print(f"{command}: {ratio}x faster than {args.against}")


if __name__ == "__main__":
    main()
