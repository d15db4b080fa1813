"""Run every benchmark and write docs/benchmarks.md.

    python -m bench.report            # full: ubuntu-stream-1 whole, the other corpora, 1M messages
    python -m bench.report --quick    # under 5 minutes on 2 cores: prefixes and 100K messages

Each replay and the scale run gets a fresh database on a throwaway embedded PostgreSQL (or on
--database-url's server). Replays run two at a time in worker processes, with
``synchronous_commit = off`` on their own database (simulated time: durability does not enter
any replay figure); the scale run runs alone afterwards with the server's defaults, since its
figures are wall-clock times. Every figure in the report comes from these runs; the only typed
numbers are the reference figures of the product article and the spec, labelled as such.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import multiprocessing
import os
import pickle
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.fidelity import FidelitySpec, measure_fidelity, problems
from bench.figures import DATA, MAIN_CORPUS, REPO, Collected, Plan, make_plan
from bench.logs import configure_logging
from bench.render import kept_sections, render
from bench.scale_ingest import ingest_through_bot
from bench.scale_measure import run_scale
from bench.turns import RunFigures, RunSpec, measure_run
from memory import EmbeddedPostgres, MemoryConfig, create_run_database, drop_database


async def run_replay(spec: RunSpec, admin_url: str) -> RunFigures:
    if multiprocessing.parent_process() is not None:
        # A worker process of a parallel report: quiet logs there. In-process (tests, one
        # worker) the caller's logging stays as it was.
        configure_logging()
    name = f"eva_bench_{os.getpid()}_{int(time.time() * 1000)}"
    url = await create_run_database(admin_url, name, commit_flush=False)
    try:
        return await measure_run(spec, url)
    finally:
        await drop_database(admin_url, name)


def replay_in_process(spec: RunSpec, admin_url: str) -> RunFigures:
    return asyncio.run(run_replay(spec, admin_url))


async def run_fidelity(spec: FidelitySpec, admin_url: str, config: MemoryConfig) -> dict[str, Any]:
    if multiprocessing.parent_process() is not None:
        configure_logging()
    name = f"eva_fidelity_{os.getpid()}_{int(time.time() * 1000)}"
    url = await create_run_database(admin_url, name, commit_flush=False)
    try:
        return await measure_fidelity(spec, url, config)
    finally:
        await drop_database(admin_url, name)


def _fidelity_in_process(spec: FidelitySpec, admin_url: str, config: MemoryConfig) -> dict[str, Any]:
    return asyncio.run(run_fidelity(spec, admin_url, config))


async def collect(plan: Plan, admin_url: str, *, workers: int = 2) -> Collected:
    """Every run of the plan; replays in ``workers`` processes (1: in this process)."""
    started, started_at = time.perf_counter(), datetime.now(UTC)
    specs = plan.runs()
    if workers > 1:
        context = multiprocessing.get_context("spawn")
        loop = asyncio.get_running_loop()
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            replays = [loop.run_in_executor(pool, replay_in_process, spec, admin_url) for spec in specs]
            checks = [
                loop.run_in_executor(pool, _fidelity_in_process, spec, admin_url, plan.config)
                for spec in plan.fidelity
            ]
            runs = list(await asyncio.gather(*replays))
            fidelity = list(await asyncio.gather(*checks))
    else:
        runs = [await run_replay(spec, admin_url) for spec in specs]
        fidelity = [await run_fidelity(spec, admin_url, plan.config) for spec in plan.fidelity]
    scale = await run_scale(plan.scale, admin_url, ingest_through_bot)
    seconds = round(time.perf_counter() - started, 1)
    return Collected(plan, runs, scale, seconds, started_at, fidelity)


def _command(*args: str) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, cwd=REPO, timeout=10, check=False)
    except OSError:
        return "unknown"
    return done.stdout.strip() or "unknown"


def machine() -> dict[str, str]:
    memory = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    dirty = _command("git", "status", "--porcelain", "--untracked-files=no")
    return {
        "commit": _command("git", "rev-parse", "HEAD")
        + (" (with uncommitted changes)" if dirty not in ("", "unknown") else ""),
        "cpus": str(os.cpu_count() or "unknown"),
        "memory": memory,
        "python": sys.version.split()[0],
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="prefixes and 100K messages: under 5 minutes")
    parser.add_argument("--database-url", help="a PostgreSQL server to create the benchmark databases on")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks.md")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the IRC corpora")
    parser.add_argument("--workers", type=int, default=2, help="replays run at once (processes)")
    parser.add_argument("--messages", type=int, help="messages in the scale chat (default 1M; quick 100K)")
    parser.add_argument("--save", type=Path, help="also keep the collected figures (pickle) here")
    parser.add_argument("--from-saved", type=Path, help="render figures kept with --save; run nothing")
    return parser.parse_args(argv)


async def main_async(args: argparse.Namespace) -> Collected:
    plan = make_plan(args.quick, args.data)
    if args.messages:
        plan = replace(plan, scale=replace(plan.scale, messages=args.messages))
    if args.database_url:
        return await collect(plan, args.database_url, workers=args.workers)
    server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="eva-bench-")), delete_on_stop=True)
    server.start(database="postgres")
    try:
        return await collect(plan, server.admin_url(), workers=args.workers)
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging()
    if not (args.data / MAIN_CORPUS).is_file():
        print(f"no corpus at {args.data / MAIN_CORPUS}", file=sys.stderr)
        return 2
    if args.from_saved:
        collected = pickle.loads(args.from_saved.read_bytes())
    else:
        collected = asyncio.run(main_async(args))
    if args.save:
        args.save.write_bytes(pickle.dumps(collected))
    command = "python -m bench.report" + (" --quick" if collected.plan.mode == "quick" else "")
    if args.messages:
        command += f" --messages {args.messages}"
    previous = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
    markdown = render(collected, machine(), command, kept_sections(previous))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown, encoding="utf-8")
    print(f"wrote {args.out} in {collected.seconds:.0f} s")
    sound = all(r.replay["invariant_violations"] == 0 for r in collected.runs)
    return 0 if sound and not any(problems(f) for f in collected.fidelity) else 1


if __name__ == "__main__":
    sys.exit(main())
