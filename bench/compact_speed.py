"""How fast the compactor builds a whole import's memory with an instant model (docs/benchmarks.md).

What a new host does, timed: `eva import` of a chat's history, then `eva compact --chat X
--until-idle --fake-model`, each as its own process on a fresh embedded database. The fake
summarizer answers at once, so the figure is the compactor's own cost: planning, reading and
writing the tree. It prints messages compacted per second, and the top entries of a profile of
the same compaction on a smaller import, so that the next regression shows where it is.

    .venv/bin/python -m bench.compact_speed [--messages 100000] [--against REF ...] [--json]

``--against REF`` (again for more refs) runs the same two commands on a checkout of REF (a git
worktree in a temporary folder, with this interpreter), one after the other on the same file,
and prints the ratio. More messages than the corpus holds are made by repeating it, each copy moved past the
one before (ids and dates), as the scale benchmark does.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

from memory import (
    ChatKey,
    NewMessage,
    build,
    fresh_database,
    make_engine,
    make_sessions,
    migrate,
    read_jsonl,
)
from memory.config import MemoryConfig
from memory.fakes.summarizer import FakeSummarizer

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "data" / "irc" / "ubuntu-stream-1.jsonl"
CHAT = "bench"
PROFILE_TOP = 12


@dataclass(frozen=True)
class Run:
    tree: str  # "this checkout" or the ref measured against
    messages: int
    import_seconds: float
    compact_seconds: float
    summary: str
    # CPU seconds of the `eva compact` process itself (not the database server's): on a shared
    # machine the wall seconds count other people's work too, these do not.
    compact_cpu_seconds: float = 0.0  # what `eva compact` printed: calls, lines written, swaps

    @property
    def per_second(self) -> float:
        return self.messages / max(self.compact_seconds, 1e-9)


def write_corpus(source: Path, messages: int, into: Path) -> int:
    """The first ``messages`` of ``source`` (JSONL), repeated past its end with ids and dates
    moved on; returns how many were written."""
    records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    first = datetime.fromisoformat(records[0]["date"].replace("Z", "+00:00"))
    last = datetime.fromisoformat(records[-1]["date"].replace("Z", "+00:00"))
    span = last - first + timedelta(days=1)
    written = 0
    with into.open("w", encoding="utf-8") as out:
        copy = 0
        while written < messages:
            for record in records:
                if written == messages:
                    break
                moved = dict(record)
                moved["i"] = copy * len(records) + int(record["i"])
                date = datetime.fromisoformat(record["date"].replace("Z", "+00:00")) + copy * span
                moved["date"] = date.isoformat().replace("+00:00", "Z")
                if record.get("reply_to"):
                    moved["reply_to"] = [copy * len(records) + int(i) for i in record["reply_to"]]
                out.write(json.dumps(moved) + "\n")
                written += 1
            copy += 1
    return written


def eva(tree: Path, data_dir: Path, *args: str) -> tuple[float, str, float]:
    """One `eva` command of the checkout ``tree``; its wall seconds, standard output and CPU seconds."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "ANTHROPIC_API_KEY", "DISCORD_TOKEN", "PYTHONPATH"}
    }
    env |= {"DATA_DIR": str(data_dir), "LOG_LEVEL": "WARNING", "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "bot.cli", *args]
    started, cpu = time.perf_counter(), _children_cpu()
    # cwd: an empty folder, so that no .env of the developer's is read.
    done = subprocess.run(command, cwd=data_dir, env=env, capture_output=True, text=True, check=False)
    seconds, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"eva {args[0]} failed in {tree} ({done.returncode}): {done.stderr.strip()[-400:]}")
    return seconds, done.stdout.strip(), cpu


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def measure(tree: Path, label: str, corpus: Path, messages: int) -> Run:
    with tempfile.TemporaryDirectory(prefix="eva-compact-speed-") as folder:
        data_dir = Path(folder)
        imported, _, _ = eva(tree, data_dir, "import", str(corpus), "--chat", CHAT)
        compacted, summary, cpu = eva(
            tree, data_dir, "compact", "--chat", CHAT, "--until-idle", "--fake-model"
        )
    return Run(label, messages, round(imported, 1), round(compacted, 1), summary, round(cpu, 1))


async def profile_compaction(corpus: Path, messages: int) -> pstats.Stats:
    """This checkout's compaction of ``messages`` under cProfile, in this process, so that the
    profile holds the compaction only (not the process's start)."""
    url, server = await fresh_database(None, prefix="eva_compact_profile")  # a throwaway embedded server
    engine = make_engine(url)
    try:
        await migrate.upgrade(engine)
        memory = build(make_sessions(engine), MemoryConfig(), FakeSummarizer())
        chat = await memory.ensure_chat(ChatKey("imported", CHAT))
        records = itertools.islice(read_jsonl(corpus), messages)
        batch = [NewMessage(r.author_name, r.created_at, r.content, is_bot=r.is_bot) for r in records]
        for start in range(0, len(batch), 10_000):
            await memory.append_many(chat, batch[start : start + 10_000])
        profiler = cProfile.Profile()
        profiler.enable()
        await memory.compact(chat, until_idle=True, force_swap=True)
        profiler.disable()
        return pstats.Stats(profiler)
    finally:
        await engine.dispose()
        if server is not None:
            server.stop()


@contextmanager
def checkout(ref: str) -> Iterator[Path]:
    """A worktree of ``ref`` in a temporary folder, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="eva-compact-ref-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(folder), ref], check=True,
                   capture_output=True)  # fmt: skip
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)], check=False,
                       capture_output=True)  # fmt: skip


def described(run: Run) -> str:
    return (
        f"{run.tree}: {run.messages:,} messages imported in {run.import_seconds:.1f} s, compacted in "
        f"{run.compact_seconds:.1f} s = {run.per_second:,.0f} messages/s, "
        f"{run.compact_cpu_seconds:.1f} CPU s ({run.summary})"
    )


def profile_top(stats: pstats.Stats, top: int = PROFILE_TOP) -> list[str]:
    """The profile's entries with the most time of their own, as `file:line(function)  seconds`."""
    rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)  # type: ignore[attr-defined]
    lines = []
    for (file, line, function), (_, calls, own, cumulative, _) in rows[:top]:
        where = Path(file).name if file.startswith("/") else file
        spent = f"{own:7.2f} s own {cumulative:7.2f} s with callees {calls:>9} calls"
        lines.append(f"{spent}  {where}:{line}({function})")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.compact_speed", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--messages", type=int, default=100_000, help="messages to import and compact")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="a JSONL export (default: #ubuntu)")
    parser.add_argument("--against", metavar="REF", action="append", default=[],
                        help="measure this git ref too, on the same file (may be given again)")  # fmt: skip
    parser.add_argument("--profile-messages", type=int, default=10_000,
                        help="messages of the profiled run (0: none)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args(argv)
    if not args.corpus.is_file():
        raise SystemExit(f"no corpus at {args.corpus}: pass --corpus PATH")

    with tempfile.TemporaryDirectory(prefix="eva-compact-corpus-") as folder:
        corpus = Path(folder) / "chat.jsonl"
        messages = write_corpus(args.corpus, args.messages, corpus)
        runs = [measure(REPO, "this checkout", corpus, messages)]
        if not args.json:
            print(described(runs[0]), flush=True)  # each as it ends: the old code's runs are long
        for ref in args.against:
            with checkout(ref) as tree:
                runs.append(measure(tree, ref, corpus, messages))
            if not args.json:
                print(described(runs[-1]), flush=True)
        top: list[str] = []
        if args.profile_messages:
            top = profile_top(asyncio.run(profile_compaction(corpus, min(args.profile_messages, messages))))

    if args.json:
        figures = [asdict(run) | {"per_second": round(run.per_second, 1)} for run in runs]
        profiled = {"profile_messages": args.profile_messages, "profile_top": top}
        print(json.dumps({"runs": figures, **profiled}, indent=2))
        return
    for other in runs[1:]:
        ratio = runs[0].per_second / max(other.per_second, 1e-9)
        print(f"ratio: {ratio:.1f}x the messages per second of {other.tree}")
    if top:
        shown = min(args.profile_messages, messages)
        print(f"profile of the compaction of {shown:,} messages (cProfile, in process, by own time):")
        print("\n".join("  " + line for line in top))


if __name__ == "__main__":
    main()
