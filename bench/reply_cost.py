"""Where the reply money goes, on each corpus's own timeline and on a friend group's.

    python -m bench.reply_cost                               # every corpus, both timelines
    python -m bench.reply_cost --corpus PATH.jsonl --limit 20000 --json
    python -m bench.reply_cost --write docs/benchmarks.md    # its section there replaced

Each run is ``bench.replay --turns`` (reply turns with and without tool steps, the rolling
summary beside them) on a fresh database of a throwaway embedded PostgreSQL, two at a time in
worker processes: once on the corpus's own dates ("irc") and once re-timed as a friend group
talks ("friends", bench/friend_timeline.py). The figures are simulated-time figures: how long
the runs take does not enter them.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import multiprocessing
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.baselines import CACHE_LIFETIMES
from bench.figures import DATA, MAIN_CORPUS
from bench.friend_timeline import FRIENDS
from bench.logs import configure_logging
from bench.markdown import table, usd
from bench.meters import compact_model
from bench.reply_causes import CAUSES, KINDS
from bench.report import machine, replay_in_process
from bench.tool_steps import ONE_STEP_SHARE, TWO_STEP_SHARE
from bench.turns import FRIENDS_TIMELINE, IRC, MONTH_ASSUMPTION, OTHER_CACHE_READ_PRICE, RunSpec, headline
from memory import EmbeddedPostgres

HEADING = "## Where the reply money goes (`python -m bench.reply_cost`)"
TIMELINES = (IRC, FRIENDS_TIMELINE)


def specs(corpora: list[Path], limit: int | None) -> list[RunSpec]:
    return [
        RunSpec(
            corpus,
            f"{corpus.name} {timeline}",
            limit,
            ttls=CACHE_LIFETIMES,
            rolling=True,
            turns=True,
            tool_steps=True,
            timeline=timeline,
        )
        for corpus in corpora
        for timeline in TIMELINES
    ]


async def collect(corpora: list[Path], limit: int | None, workers: int) -> list[dict[str, Any]]:
    """Every run's ``bench.replay --json --turns`` figures, corpus by corpus, irc then friends."""
    server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="eva-reply-cost-")), delete_on_stop=True)
    server.start(database="postgres")
    try:
        context = multiprocessing.get_context("spawn")
        loop = asyncio.get_running_loop()
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            runs = await asyncio.gather(
                *(
                    loop.run_in_executor(pool, replay_in_process, spec, server.admin_url())
                    for spec in specs(corpora, limit)
                )
            )
    finally:
        server.stop()
    return [{**run.replay, **headline(run, compact_model())} for run in runs]


def _both(figures: dict[str, Any], key: str) -> str:
    other = str(OTHER_CACHE_READ_PRICE).replace(".", "_")
    return f"{usd(figures[key])} / {usd(figures[f'{key}_if_cache_read_{other}'])}"


def per_turn_table(runs: list[dict[str, Any]]) -> str:
    rows = [
        [
            r["corpus"],
            r["timeline"],
            f"{r['reply_turns']:,}",
            usd(r["reply_usd_per_turn_without_keep_warm"]),
            _both(r, "reply_usd_per_turn"),
            f"{r['keep_warm_pings_per_turn']:.1f}",
            usd(r["reply_usd_per_turn_with_tools"]),
            usd(r["rolling_summary_usd_per_turn_without_keep_warm"]),
            _both(r, "rolling_summary_usd_per_turn"),
            f"{r['reply_usd_per_turn'] / max(r['rolling_summary_usd_per_turn'], 1e-9):.2f}x",
            f"{r['reply_cache_read_share']:.1%}",
        ]
        for r in runs
    ]
    headers = [
        "corpus",
        "timeline",
        "counted turns",
        "Eva $/turn before keep-warm",
        f"Eva $/turn (reads $0.10 / ${OTHER_CACHE_READ_PRICE})",
        "pings a turn",
        "Eva with tool steps",
        "rolling summary before keep-warm",
        "rolling summary $/turn (same two prices)",
        "Eva / rolling",
        "Eva's prompt read from cache",
    ]
    return table(headers, rows)


def cause_table(run: dict[str, Any]) -> str:
    """One run's bill by cause and kind, Eva's then the rolling summary's."""
    rows = []
    for who, key in (("Eva", "reply_usd_by_cause"), ("rolling summary", "rolling_summary_usd_by_cause")):
        causes = run.get(key) or {}
        total = sum(c["usd_per_turn"] for c in causes.values()) or 1e-9
        for cause in [c for c in CAUSES if c in causes]:
            c = causes[cause]
            share = f"{c['usd_per_turn'] / total:.0%}"
            kinds = [usd(c[f"{kind}_usd_per_turn"]) for kind in KINDS]
            rows.append([who, cause, f"{c['turns']:,}", f"{usd(c['usd_per_turn'])} ({share})", *kinds])
    headers = ["prompt", "cause", "turns", "$ per turn of the run (share)", "writes 5 min", "writes 1 h"]
    return table([*headers, "uncached input", "reads", "output"], rows)


def month_table(runs: list[dict[str, Any]]) -> str:
    rows = [
        [
            r["corpus"],
            usd(r["compaction_and_cards_usd_per_1k_messages"]),
            usd(r["reply_usd_per_turn"]),
            f"${r['month_usd']:.2f}",
            usd(r["reply_usd_per_turn_haiku_5_5"]),
            f"${r['month_usd_haiku_5_5_replies']:.2f}",
        ]
        for r in runs
        if r["timeline"] == FRIENDS_TIMELINE
    ]
    headers = ["corpus", "compaction + cards per 1k messages", "Sonnet 5.5 reply", "a month"]
    return table([*headers, "Haiku 5.5 reply", "a month with Haiku 5.5 replies"], rows)


def render(runs: list[dict[str, Any]], host: dict[str, str], command: str, minutes: float) -> str:
    shown = MAIN_CORPUS if any(r["corpus"] == MAIN_CORPUS for r in runs) else runs[0]["corpus"]
    main = [r for r in runs if r["corpus"] == shown]  # the bill by cause: one corpus, both timelines
    causes = "\n\n".join(f"`{r['corpus']}`, {r['timeline']} timeline:\n\n{cause_table(r)}" for r in main)
    return f"""{HEADING}

Generated by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC in {minutes:,.1f} minutes (commit
{host["commit"]}, {host["cpus"]} CPUs, load {host["load"]} at the end; simulated time, so the load
does not enter the figures). Each run is `bench.replay --turns`: a reply turn is one call of
about 150 output tokens at Sonnet 5.5 list prices with the bot's own cache policy: per-chat
5-minute or 1-hour marks, and keep-warm pings through the quiet hours when the chat's gaps say
they pay (bot/core/cache_policy.py, bot/core/keep_warm.py; "before keep-warm" is the same run
without pings, the marks chosen as before). The rolling summary runs under the same policy,
pings included. "With tool steps" prices the
same turns with {ONE_STEP_SHARE:.0%} of them making one zoom/recall step and {TWO_STEP_SHARE:.0%}
two, the steps run by the real tools on the chat as it is then (bench/tool_steps.py). Two
timelines: irc, the corpus's own dates, a turn at about 1 message in 50 plus every message naming
its most active person; friends, {FRIENDS.describe()}. Sonnet 5.5's cache reads are $0.10 per
million in memory/pricing.py and ${OTHER_CACHE_READ_PRICE} on some of the provider's pages
(memory/pricing.py says which), so reply figures are given at both.

{per_turn_table(runs)}

Where the money goes: each counted turn put down to the first change since the chat's previous
turn that explains its bill (bench/reply_causes.py), split by what was paid for; the causes' $
add up to the $ per turn above.

{causes}

A month of a friend-group server: {MONTH_ASSUMPTION}, at the reply cost of the friends timeline.

{month_table(runs)}
"""


def with_section(document: str, section: str) -> str:
    """``document`` with its reply-cost section replaced by ``section`` (added before the last
    section, "How these figures are made", when it has none)."""
    lines = document.splitlines()
    start = next((i for i, line in enumerate(lines) if line == HEADING), None)
    if start is None:
        at = max((i for i, line in enumerate(lines) if line.startswith("## ")), default=len(lines))
        return "\n".join([*lines[:at], section.rstrip(), "", *lines[at:]]) + "\n"
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join([*lines[:start], section.rstrip(), "", *lines[end:]]) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.reply_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", type=Path, action="append", help="a corpus (again for more); default: every one"
    )
    parser.add_argument("--limit", type=int, help="replay only the first N messages of each")
    parser.add_argument("--workers", type=int, default=2, help="runs at once (processes)")
    parser.add_argument("--json", action="store_true", help="print the runs' figures as one JSON list")
    parser.add_argument("--write", type=Path, help="replace this command's section in that markdown file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging()
    corpora = args.corpus or sorted(DATA.glob("*.jsonl"), key=lambda p: (p.name != MAIN_CORPUS, p.name))
    missing = [str(c) for c in corpora if not c.is_file()]
    if missing:
        print(f"no such corpus: {', '.join(missing)}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    runs = asyncio.run(collect(corpora, args.limit, args.workers))
    minutes = (time.perf_counter() - started) / 60
    if args.json:
        print(json.dumps(runs))
    if args.write:
        command = "python -m bench.reply_cost" + (f" --limit {args.limit}" if args.limit else "")
        command += "".join(f" --corpus {c.name}" for c in args.corpus or [])
        section = render(runs, machine(), command, minutes)
        previous = args.write.read_text(encoding="utf-8") if args.write.is_file() else ""
        args.write.write_text(with_section(previous, section), encoding="utf-8")
    sound = all(r["invariant_violations"] == 0 and r["context_violations"] == 0 for r in runs)
    return 0 if sound else 1


if __name__ == "__main__":
    sys.exit(main())
