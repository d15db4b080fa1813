"""bench/ reaches the database only through memory/ and uses no test code (docs/design.md,
architecture): no module under bench/ imports sqlalchemy or tests."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
FORBIDDEN = ("sqlalchemy", "tests")


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_benchmark_imports_sqlalchemy_or_tests() -> None:
    modules = sorted(BENCH.glob("*.py"))
    assert len(modules) >= 10, modules  # the walk really found the benchmarks
    found = {path.name: sorted(imported_roots(path) & set(FORBIDDEN)) for path in modules}
    assert {name: bad for name, bad in found.items() if bad} == {}
