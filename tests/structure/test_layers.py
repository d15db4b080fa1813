"""Which package may import which (docs/design.md, "Architecture"): memory/ imports neither
bot/ nor bench/; bot/core/ imports nothing of the Discord edge; bench/ reaches the bot only in
the benchmarks that measure the bot's own paths: its ingest, and the dashboard's memory page
(bot/core/, Discord-free, is not the edge: the reply benchmarks build turns with it)."""

from __future__ import annotations

from pathlib import Path

from tests.structure.imports import Import, imports, modules

REPO = Path(__file__).resolve().parents[2]
BOT_INGEST_BENCHMARK = "bench.scale_ingest"
BOT_BENCHMARKS = (BOT_INGEST_BENCHMARK, "bench.dashboard_page")


def crossing(found: list[Import], importer: str, imported: str) -> list[str]:
    return sorted(
        f"{i.importer} -> {i.imported}"
        for i in found
        if (i.importer == importer or i.importer.startswith(importer + "."))
        and (i.imported == imported or i.imported.startswith(imported + "."))
    )


def test_memory_imports_neither_bot_nor_bench() -> None:
    found = list(imports(modules(REPO)))
    assert crossing(found, "memory", "bot") == [] and crossing(found, "memory", "bench") == []


def test_core_imports_nothing_of_the_edge() -> None:
    found = list(imports(modules(REPO)))
    core = [i for i in found if i.importer.startswith("bot.core.")]
    assert len(core) >= 5, core  # core's own imports were read
    assert [
        f"{i.importer} -> {i.imported}"
        for i in core
        if i.imported.startswith("bot.") and not i.imported.startswith("bot.core")
    ] == []


def test_only_the_ingest_benchmark_reaches_the_bot() -> None:
    found = list(imports(modules(REPO)))
    into_bot = [edge for edge in crossing(found, "bench", "bot") if " -> bot.core." not in edge]
    assert [edge for edge in into_bot if not edge.startswith(tuple(b + " " for b in BOT_BENCHMARKS))] == []
    assert [e for e in into_bot if e.startswith(BOT_INGEST_BENCHMARK + " ")], "it measures the bot's ingest"
