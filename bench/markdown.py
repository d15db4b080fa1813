"""Markdown pieces the benchmark sections share (docs/benchmarks.md)."""

from __future__ import annotations


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def usd(value: float) -> str:
    return f"${value:,.4f}"
