"""docs/benchmarks.md from the figures of one ``python -m bench.report`` run (bench/report.py).

Pure formatting: every number comes from the collected figures, except the reference figures
of the product article and the spec, typed in below and labelled with their source wherever
they appear.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bench.baselines import EVERY_TURN, QUIET_SWAP, SWAP_AT_ONCE
from bench.cache_model import MeterFigures
from bench.figures import Collected
from bench.markdown import table
from bench.meters import REPLY_OUTPUT_TOKENS
from bench.render_cost import cost_sections
from bench.render_fidelity import fidelity_section
from bench.scale_measure import ScaleFigures
from bench.turns import BLOCKED_WHAT_IF, RunFigures

# Reference figures, typed in from their sources (labelled as such wherever they appear).
ARTICLE_CALLS, ARTICLE_MESSAGES, ARTICLE_USD = 4_801, 52_000, 3.0  # reference/eva-memory-article.txt
# The OptChat spec rev. 3, section 3.3 (docs/design.md section 9).
SPEC_TURN_READ, SPEC_COMPACT_READ = 0.986, 0.962
HAIKU_4, HAIKU_5 = "claude-haiku-4-5", "claude-haiku-5-5"

Check = Callable[[ScaleFigures], bool]
# Goals for the 1M-message chat on this machine, one per row of the scale table.
GOALS: dict[str, tuple[str, Check]] = {
    "prompt": ("p95 <= 50 ms", lambda f: f.latencies["prompt"].p95_ms <= 50),
    "zoom_row": ("p95 <= 100 ms", lambda f: f.latencies["zoom_row"].p95_ms <= 100),
    "zoom_deep": ("p95 <= 100 ms", lambda f: f.latencies["zoom_deep"].p95_ms <= 100),
    "recall": ("p95 <= 50 ms", lambda f: f.latencies["recall"].p95_ms <= 50),
    "recall_word": (
        "p95 <= 50 ms",
        lambda f: "recall_word" in f.latencies and f.latencies["recall_word"].p95_ms <= 50,
    ),
    "recall_author": ("p95 <= 100 ms", lambda f: f.latencies["recall_author"].p95_ms <= 100),
    "recall_small": (
        "p95 <= 20 ms",
        lambda f: "recall_small" in f.latencies and f.latencies["recall_small"].p95_ms <= 20,
    ),
    "ingest": (">= 1,000 msg/s", lambda f: f.ingest_per_second >= 1000),
    "erase": ("<= 10 s", lambda f: f.erase_seconds <= 10),
}


def _usd(value: float) -> str:
    return f"${value:,.4f}" if value < 10 else f"${value:,.2f}"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _per(value: float, count: int, scale: int = 1) -> float:
    return value * scale / max(count, 1)


def _run_row(run: RunFigures) -> list[str]:
    haiku4, haiku5, reply, r = run.compaction[HAIKU_4], run.compaction[HAIKU_5], run.replies["5m"], run.replay
    return [
        run.corpus,
        f"{run.messages:,}",
        f"{r['calls_per_message']:.4f}",
        _pct(r["free_node_share"]),
        _usd(_per(haiku4.cost_usd, run.messages, 1000)),
        _usd(_per(haiku5.cost_usd, run.messages, 1000)),
        _pct(haiku4.read_share),
        f"{run.turns:,}",
        f"{_per(reply.prompt_tokens, reply.requests):,.0f}",
        _pct(reply.read_share),
        _usd(_per(reply.cost_usd, reply.requests)),
        f"{reply.max_prompt_tokens:,} ({run.largest_prompt_bytes / 1000:,.0f} KB)",
        f"{r['swaps']} ({r['forced_swaps']})",
        str(r["invariant_violations"]),
        f"{run.seconds:,.0f}",
    ]


PER_CORPUS = [
    "corpus", "messages", "compaction requests / msg", "free lines", "$ / 1,000 msgs (Haiku 4.5)",
    "$ / 1,000 msgs (Haiku 5.5)", "compaction read from cache", "reply turns", "reply input tokens / turn",
    "read from cache", "$ / reply (Sonnet 5.5)", "largest reply prompt, tokens", "swaps (forced)",
    "invariant violations", "replay s",
]  # fmt: skip


def _variant(
    name: str, messages: int, calls: float, compaction: MeterFigures, reply: MeterFigures
) -> list[str]:
    return [
        name,
        f"{calls:.4f}",
        _usd(_per(compaction.cost_usd, messages, 1000)),
        f"{_per(reply.prompt_tokens, reply.requests):,.0f}",
        _pct(reply.read_share),
        _usd(_per(reply.cost_usd, reply.requests)),
        _usd(_per(compaction.cost_usd + reply.cost_usd, messages, 1000)),
    ]


def _comparison(quiet: RunFigures, at_once: RunFigures) -> str:
    rolling = quiet.rolling or {}
    calls = quiet.replay["calls_per_message"]
    rows = [
        _variant(
            "Eva, quiet swap, 5-min marks",
            quiet.messages,
            calls,
            quiet.compaction[HAIKU_4],
            quiet.replies["5m"],
        ),
        _variant(
            "Eva, quiet swap, 1-hour marks",
            quiet.messages,
            calls,
            quiet.compaction[HAIKU_4],
            quiet.replies["1h"],
        ),
        _variant(
            "Eva, swap as soon as built, 5-min marks",
            at_once.messages,
            at_once.replay["calls_per_message"],
            at_once.compaction[HAIKU_4],
            at_once.replies["5m"],
        ),
        _variant(
            f"Rolling summary ({rolling['summary_bytes'] // 1000} KB), 5-min marks",
            quiet.messages,
            _per(rolling["rewrites"], quiet.messages),
            rolling["compaction"][HAIKU_4],
            rolling["replies"],
        ),
    ]
    headers = [
        "variant", "compaction requests / msg", "compaction $ / 1,000 msgs (Haiku 4.5)",
        "reply input tokens / turn",
        "read from cache", "$ / reply (Sonnet 5.5)", "compaction + replies, $ / 1,000 msgs",
    ]  # fmt: skip
    return table(headers, rows) + (
        f"\n\nOne report run, {quiet.messages:,} messages, the same {quiet.turns:,} reply turns in each row. "
        "The 1-hour row and the rolling summary were accounted in the quiet-swap replay itself; the "
        f"swap-at-once row is a second replay of the same messages ({at_once.turns:,} turns). The rolling "
        f"summary was rewritten {rolling['rewrites']} times; its largest reply prompt was "
        f"{rolling['replies'].max_prompt_tokens:,} tokens, Eva's {quiet.replies['5m'].max_prompt_tokens:,}."
    )


def _reference(run: RunFigures, every: RunFigures) -> str:
    h4, h5, blocked = run.compaction[HAIKU_4], run.compaction[HAIKU_5], run.compaction[BLOCKED_WHAT_IF]
    calls = ARTICLE_CALLS / ARTICLE_MESSAGES
    article_calls = f"{calls:.3f} (article: {ARTICLE_CALLS:,} calls, ~{ARTICLE_MESSAGES:,} msgs)"
    article_usd = (
        f"~{_usd(ARTICLE_USD * 1000 / ARTICLE_MESSAGES)} (article: ~${ARTICLE_USD:.0f}, model not named)"
    )
    rows = [
        ["compaction requests per message", f"{run.replay['calls_per_message']:.4f}", article_calls],
        [
            "compaction $ per 1,000 messages, Haiku 4.5",
            _usd(_per(h4.cost_usd, run.messages, 1000)),
            article_usd,
        ],
        ["compaction $ per 1,000 messages, Haiku 5.5", _usd(_per(h5.cost_usd, run.messages, 1000)), "(none)"],
        [
            "reply input read from the cache (5-min marks, sampled turns)",
            _pct(run.replies["5m"].read_share),
            f"{_pct(SPEC_TURN_READ)} (spec rev. 3 §3.3: turns)",
        ],
        [
            f"reply input read from the cache, a turn at every message ({every.messages:,} msgs)",
            _pct(every.replies["5m"].read_share),
            f"{_pct(SPEC_TURN_READ)} (spec: 3,000 replayed messages)",
        ],
        [
            "compaction input read from the cache",
            _pct(h4.read_share),
            f"{_pct(SPEC_COMPACT_READ)} (spec: compactions)",
        ],
        [
            "what-if: compactor context in 4-line blocks: read from cache / $ per 1,000 msgs (Haiku 4.5)",
            f"{_pct(blocked.read_share)} / {_usd(_per(blocked.cost_usd, run.messages, 1000))}",
            "(none)",
        ],
    ]
    headers = [
        "figure",
        f"measured on {run.corpus} ({run.messages:,} messages)",
        "reference (typed in, with source)",
    ]
    return table(headers, rows)


NOTES = {
    "prompt": "cProfile: a prompt_view is a handful of round trips (the row's nodes in one query, "
    "memory/storage/tree_nodes.py fetch; the keep-boundary window; the tail range) plus one ORM "
    "object per tail message (up to ~500); on a loaded machine the tail's objects dominate.",
    "zoom_row": "cProfile: an unbuilt line is walked down one query per level "
    "(memory/storage/tree_nodes.py resolve).",
    "recall": "memory/reading/search.py: one statement with a subquery per query word, each reading "
    "its newest 100 matches in the part of the chat its ANALYZE share says holds 200 (the whole chat "
    "for a rare word), each ANDed with the primary-key range; then BM25 in Python over the "
    "candidates (memory/reading/ranking.py).",
    "recall_author": "memory/reading/search.py: the same subqueries, each ANDed with the name's trigram "
    "bitmap; a word by one author comes short more often and is read again over the rest of the chat.",
    "recall_small": "memory/reading/search.py: the chat-led GIN indexes keep the big chat's matches out; the "
    "first window of a common word still ANDs its bitmap over every chat.",
    "ingest": "the batch is what queued during the previous write; one multi-row INSERT per batch "
    "(memory/storage/log.py append_replies); the rest is discord.py/SimCord's per-message work and "
    "the commit.",
    "erase": "the per-level DELETEs of covering lines and the UPDATE of the erased rows (tsvector, GIN).",
}
NOTES["zoom_deep"] = NOTES["zoom_row"]
NOTES["recall_word"] = NOTES["recall"]


def _scale(f: ScaleFigures) -> str:
    met = {key: check(f) for key, (_, check) in GOALS.items()}
    lat = f.latencies

    def row(key: str, label: str, measured: str) -> list[str]:
        return [label, measured, GOALS[key][0], "met" if met[key] else "**missed**"]

    def ms(key: str) -> str:
        return f"{lat[key].p50_ms:.1f} / {lat[key].p95_ms:.1f} ms"

    rows = [
        row("prompt", "reply prompt: prompt_view + build_request, p50 / p95", ms("prompt")),
        row("zoom_row", "zoom of random row lines, p50 / p95", ms("zoom_row")),
        row("zoom_deep", "zoom of random deep addresses (levels 0-12), p50 / p95", ms("zoom_deep")),
        row("recall", "ranked recall of 3-6 words sampled from the corpus, p50 / p95", ms("recall")),
        row(
            "recall_word",
            "recall of one word sampled from the corpus, p50 / p95",
            ms("recall_word") if "recall_word" in lat else "not measured",
        ),
        row("recall_author", "recall with an author filter, p50 / p95", ms("recall_author")),
        row(
            "recall_small",
            "ranked recall (3-6 words) in a 10,000-message chat of the same database, p50 / p95",
            ms("recall_small") if "recall_small" in lat else "not measured",
        ),
        row(
            "ingest",
            "ingest: the bot's path (gateway message, channel queue, one transaction per waiting batch)",
            f"{f.ingest_per_second:,.0f} msg/s (batches of {f.ingest_batch_mean:,.0f} on average)",
        ),
        [
            "MemoryEngine.append, one message per transaction",
            f"{f.append_per_second:,.0f} msg/s",
            "",
            "",
        ],
        row(
            "erase", "erase_author of one person", f"{f.erase_seconds:.2f} s ({f.erase_messages:,} messages)"
        ),
        [
            "database size",
            f"{f.database_bytes / 1e6:,.0f} MB ({f.bytes_per_million / 1e9:.2f} GB per 1M msgs)",
            "",
            "",
        ],
    ]
    tables = ", ".join(f"{name} {size / 1e6:,.0f} MB" for name, size in f.table_bytes.items() if size > 1e6)
    missed = [f"- **{key}** missed: {NOTES[key]}" for key, ok in met.items() if not ok]
    if not met["ingest"]:
        missed.append(
            f"  Measured here: a one-row INSERT + COMMIT takes {f.commit_ms:.2f} ms with "
            f"synchronous_commit on and {f.commit_async_ms:.2f} ms off; MemoryEngine.append with "
            f"synchronous_commit off logs {f.ingest_async_per_second:,.0f} msg/s (a what-if, not the "
            "default)."
        )
    return (
        table(["figure", "measured", "goal", ""], rows)
        + f"\n\nThe chat: {f.messages:,} messages of {f.corpus} repeated with fresh ids and dates, logged "
        f"with append_many in {f.load_seconds:,.0f} s; tree and row built in {f.tree_seconds:,.0f} s: "
        f"{f.nodes:,} lines ({f.model_nodes:,} by the fake model); a row of {f.row_lines} lines "
        f"({f.row_bytes / 1000:,.1f} KB) over messages 0-{f.boundary - 1:,}. The erasure deleted "
        f"{f.erase_nodes:,} lines. Tables: {tables}. Ingest measured over {f.ingest_messages:,} messages "
        "(bench/scale_ingest.py: the bot on SimCord, its channel made the big chat)."
        + ("\n\n" + "\n".join(missed) if missed else "\n\nEvery goal is met.")
    )


def _host(c: Collected, host: dict[str, str]) -> str:
    p = c.plan
    main_scope = "whole" if p.main_limit is None else f"its first {p.main_limit:,} messages"
    other_scope = "whole" if p.others_limit is None else f"first {p.others_limit:,} messages each"
    quick = " (quick mode; the full run uses 1,000,000)" if p.mode == "quick" else ""
    return (
        f"- Commit: `{host['commit']}`\n"
        f"- Machine: {host['cpus']} CPUs, {host['memory']} memory, Python {host['python']}, "
        f"PostgreSQL {c.scale.postgres_version} (embedded); load average at the end {host['load']}: the "
        "machine is shared, so latencies are noisy\n"
        f"- Corpora: `{p.main.name}` ({main_scope}); {', '.join(f'`{o.name}`' for o in p.others)} "
        f"({other_scope}); the scale chat: {c.scale.messages:,} messages{quick}"
    )


# A section measured by a command of its own names it in its heading, "(`python -m bench.X`)":
# the report does not run those commands (the old code's compaction alone takes half an hour),
# so it keeps their sections from the file it replaces, as their commands last wrote them. The
# report's own sections and bench.fidelity's, which it measures, are written anew.
_OWN_COMMAND = re.compile(r"^## .*\(`python -m bench\.(\w+)[^`]*`")
_MEASURED_HERE = frozenset({"report", "fidelity"})


def kept_sections(previous: str) -> str:
    """The sections of ``previous`` (the report being replaced) that other commands measure."""
    kept: list[str] = []
    keeping = False
    for line in previous.splitlines():
        if line.startswith("## "):
            own = _OWN_COMMAND.match(line)
            keeping = own is not None and own.group(1) not in _MEASURED_HERE
        if keeping:
            kept.append(line)
    return "\n".join(kept).strip() + "\n\n" if kept else ""


def render(c: Collected, host: dict[str, str], command: str, kept: str = "") -> str:
    main = next(r for r in c.runs if r.label == QUIET_SWAP and r.rolling is not None)
    at_once = next(r for r in c.runs if r.label == SWAP_AT_ONCE)
    every = next(r for r in c.runs if r.label == EVERY_TURN)
    per_corpus = [r for r in c.runs if r.label == QUIET_SWAP]
    summary_bytes = main.rolling["summary_bytes"] if main.rolling else 0
    return f"""# Benchmarks

Generated by `{command}` ({c.plan.mode} mode) on {c.started_at:%Y-%m-%d %H:%M} UTC in {c.seconds / 60:,.1f}
minutes. Every figure below is measured by that run; the only typed-in numbers are the reference
figures, labelled with their source.

{_host(c, host)}
- Size model: {main.replay["size_model"]}

## Against the reference figures

{_reference(main, every)}

## Per corpus (quiet swap, 5-minute marks)

{table(PER_CORPUS, [_run_row(r) for r in per_corpus])}

{cost_sections(c)}

## Swap policy, cache lifetime, rolling summary (`{main.corpus}`)

{_comparison(main, at_once)}

{fidelity_section(c.fidelity)}
## One chat at scale

{_scale(c.scale)}

{kept}## How these figures are made

- Replay (bench/replay_loop.py): every message goes through the real log and compactor on a fresh
  PostgreSQL database, on simulated time (the message dates), with the fake summarizer above
  (10% of first tries overshoot 512 bytes by 5-40 bytes and are cut at a word boundary, or, in
  the "before" runs, retried in the same conversation). Row
  invariants are checked after every swap and batch.
- Compaction cost (bench/cache_model.py): each compactor call is priced as the requests
  memory/compaction/anthropic_summarizer.py would send, built by memory/fakes/summarizer_requests.py
  (system, cache-marked `<chat>` context, task block;
  a retry resends the conversation; "requests" counts retries), tokens = UTF-8 bytes / 4, through
  the prompt-cache simulation of memory/fakes/prompt_cache.py (20-block lookback, minimum 4,096
  tokens for Haiku, 1,024 for Sonnet) on corpus time, at the list prices of memory/pricing.py
  (Haiku 5.5's >100K tier and its tokenizer's ~30% more tokens included).
- Reply turns (bench/turns.py): at a fixed-seed 1-in-{c.plan.runs()[0].sample_every} sample of messages plus
  every message naming the corpus's most active human author (`{main.person}` in `{main.corpus}`), the
  request (bench/meters.py) is bot/core/turn.py's `build_request` on the engine's `prompt_view` (tools,
  system, row in
  4-line blocks, tail in blocks cut at indexes k*8, turn note, 4 marks). Assumed: one model call
  per turn (no tool steps), {REPLY_OUTPUT_TOKENS} output tokens, Claude Sonnet 5.5; the bot's own replies
  are not added to the log. Cache lifetimes are 5 minutes / 1 hour of corpus time, so how often
  the bot speaks decides most of the cache share: the every-message row shows the layout itself.
- Rolling summary (bench/baselines.py): the same raw tail; past TAIL_START the summary is
  rewritten from the whole old summary plus the tail except its newest TAIL_KEEP, new size
  min({summary_bytes:,} bytes, old + 0.5 x slice); its replies use the same layout with the summary
  in place of the row.
- Scale (bench/scale_measure.py, see its docstring): wall-clock on the shared machine, server defaults
  (synchronous_commit on).

Rerun: `python -m bench.report --quick` (under 5 minutes) or `python -m bench.report` (full);
`--database-url postgresql://...` uses your own server (a fresh database per run).
"""
