"""The compaction-cost sections of docs/benchmarks.md: the headline figures of every corpus
(the ones ``python -m bench.replay --json --turns`` prints) and before/after from one run.

Pure formatting of measured figures (bench/report.py collects them).
"""

from __future__ import annotations

from bench.baselines import BEFORE, QUIET_SWAP
from bench.figures import Collected
from bench.markdown import table, usd
from bench.meters import AUTO, DEFAULT_COMPACT_MODEL
from bench.turns import HAIKU_4_5, RunFigures, headline


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _after_runs(c: Collected) -> list[RunFigures]:
    return [r for r in c.runs if r.label == QUIET_SWAP and AUTO in r.replies]


def headline_table(c: Collected) -> str:
    rows = []
    for run in _after_runs(c):
        h = headline(run, DEFAULT_COMPACT_MODEL)
        h45 = headline(run, HAIKU_4_5)
        rows.append(
            [
                run.corpus,
                f"{run.messages:,}",
                str(h["context_violations"]),
                str(run.replay["invariant_violations"]),
                f"{run.replay['calls_per_message']:.4f}",
                f"{_pct(h['compaction_cache_read_share'])} / {_pct(h45['compaction_cache_read_share'])}",
                usd(h["usd_per_1k_messages"]),
                usd(h["usd_per_1k_messages_haiku_4_5"]),
                usd(h["reply_usd_per_turn"]) if "reply_usd_per_turn" in h else "no turns",
                _pct(h["reply_cache_read_share"]) if "reply_cache_read_share" in h else "-",
                usd(h["rolling_summary_usd_per_turn"]) if "rolling_summary_usd_per_turn" in h else "-",
            ]
        )
    headers = [
        "corpus", "messages", "context violations", "invariant violations", "compaction requests / msg",
        "compaction read from cache (Haiku 5.5 / 4.5)", "$ / 1,000 msgs (Haiku 5.5, default)",
        "$ / 1,000 msgs (Haiku 4.5)", "$ / reply (Sonnet 5.5, per-chat marks)", "reply read from cache",
        "rolling summary $ / reply (same marks)",
    ]  # fmt: skip
    return table(headers, rows)


def before_after_table(c: Collected) -> str:
    before = {r.corpus: r for r in c.runs if r.label == BEFORE}
    rows = []
    for run in _after_runs(c):
        old = before.get(run.corpus)
        if old is None:
            continue
        then, now = headline(old, HAIKU_4_5), headline(run, HAIKU_4_5)
        then5, now5 = headline(old, DEFAULT_COMPACT_MODEL), headline(run, DEFAULT_COMPACT_MODEL)
        rows.append(
            [
                run.corpus,
                f"{old.replay['calls_per_message']:.4f} -> {run.replay['calls_per_message']:.4f}",
                f"{_pct(then['compaction_cache_read_share'])} -> {_pct(now['compaction_cache_read_share'])}",
                f"{usd(then['usd_per_1k_messages'])} -> {usd(now['usd_per_1k_messages'])}",
                f"{usd(then5['usd_per_1k_messages'])} -> {usd(now5['usd_per_1k_messages'])}",
                f"{usd(run.replies['5m'].cost_usd / max(run.turns, 1))} -> "
                f"{usd(run.replies[AUTO].cost_usd / max(run.turns, 1))}",
            ]
        )
    headers = [
        "corpus", "compaction requests / msg", "compaction read from cache (Haiku 4.5)",
        "$ / 1,000 msgs (Haiku 4.5)", "$ / 1,000 msgs (Haiku 5.5)", "$ / reply (Sonnet 5.5)",
    ]  # fmt: skip
    return table(headers, rows)


def cost_sections(c: Collected) -> str:
    return f"""## Compaction context and cost, every corpus

{headline_table(c)}

Context violations: compactor calls whose `<chat>` context was not a run of the row lines before
each task's input, checked against the tables at call time (memory/fakes/context_check.py); 0 required.
Haiku 5.5 is priced with its >100K-token tier and its tokenizer's ~30% more tokens (every token
count x 1.3, so its cache minimum of 4,096 tokens is reached with less text). Replies: each chat's
marks get 5-minute or 1-hour lifetimes from its recent gaps between turns, and keep-warm pings
through the quiet hours when those gaps say the pings cost less than the writes they save
(bot/core/cache_policy.py, bot/core/keep_warm.py; the pings are in the $ per reply); the rolling
summary's replies are accounted under the same policy.

## Before / after, in this run

{before_after_table(c)}

Before: the same engine with `{BEFORE}` (bench/baselines.py `before_config`: each call its own
context of lines before its first task on a 16 KB grid, all calls at once, 4 tasks a call, every
overshoot asked again in a second request), replies with 5-minute marks. After: one shared
context a row (its oldest lines up to {c.plan.config.min_context_bytes // 1000} KB, written by one call
and read by the later ones; the ruler and the answer form in the cached system prompt),
{c.plan.config.tasks_per_call} tasks a call, overshoots of up to {c.plan.config.trim_slack} bytes cut
at a word boundary, replies with per-chat lifetimes and keep-warm pings."""
