"""bench.dashboard_page still runs on a small scale chat and its figures add up."""

from __future__ import annotations

from pathlib import Path

from bench.dashboard_page import measure
from bench.scale_measure import ScaleSpec
from memory import create_run_database, drop_database


async def test_the_memory_page_benchmark_measures_both_reads(
    postgres_admin_url: str, shared_data: Path
) -> None:
    spec = ScaleSpec(shared_data / "irc" / "rust.jsonl", messages=3_000, samples=6, erase=0)
    url = await create_run_database(postgres_admin_url, "eva_dash_bench_test")
    try:
        result = await measure(spec, url)
    finally:
        await drop_database(postgres_admin_url, "eva_dash_bench_test")
    assert result["messages"] == 3_000 and result["samples"] == 6
    detail = result["detail"]
    assert detail["prompt_view_ms"]["samples"] == detail["memory_page_ms"]["samples"] == 6
    assert result["prompt_view_p95_ms"] > 0 and result["memory_page_p95_ms"] > 0
    assert result["over_prompt_view_ms"] == round(
        result["memory_page_p95_ms"] - result["prompt_view_p95_ms"], 2
    )
    assert detail["row_lines"] > 0 and detail["page_bytes"] > 10_000  # the row and tail were on the page
