"""bot/core/ and the benchmarks that drive it must load without discord (docs/design.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PROBE = """
import importlib, pkgutil, sys
import bot.core
names = sorted(m.name for m in pkgutil.walk_packages(bot.core.__path__, "bot.core."))
for name in names + {extra!r}:
    importlib.import_module(name)
bad = sorted(m for m in sys.modules if m == "discord" or m.startswith("discord."))
print(len(names), ",".join(bad))
"""

# The scale measurement moved from bench.scale (now its entry point, which hands it the bot's
# ingest of bench/scale_ingest.py) to bench.scale_measure.
BENCHMARKS = [
    "bench.replay", "bench.turns", "bench.baselines", "bench.cache_model", "bench.meters", "bench.scale_measure",
]  # fmt: skip


def _probe(extra: list[str]) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(extra=extra)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    count, _, bad = done.stdout.strip().partition(" ")
    return int(count), bad


def test_core_imports_no_discord() -> None:
    count, bad = _probe([])
    assert count >= 5, count  # turn, prompts, tools, cache_policy, sentences, streaming
    assert bad == "", f"bot/core/ imported: {bad}"


def test_benchmarks_import_no_discord() -> None:
    _, bad = _probe(BENCHMARKS)
    assert bad == "", f"the benchmarks imported: {bad}"
