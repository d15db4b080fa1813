"""The project's imports as a graph, read from the source (ast), never by importing it.

A module is a dotted name under one of the packages; an edge ``a -> b`` is an import in ``a``
of ``b`` (``from p import m`` is an edge to the module ``p.m`` when ``m`` is one, else to
``p``). Every import counts, wherever it stands, so that a function-level or a
``TYPE_CHECKING`` import cannot hide a circle; those two kinds are also reported as late.
The implicit import of a parent package's ``__init__`` is not an edge: it is Python's way of
finding the module, not a dependency the code states.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("bot", "memory", "bench")


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    late: str | None  # "function" or "TYPE_CHECKING" for a late import, None at module level


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            found[module_name(root, path)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, known: Mapping[str, Path], importer: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: resolve against the importer's package
        base = importer.split(".")
        is_package = known[importer].name == "__init__.py"
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    return [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]


def imports(known: Mapping[str, Path]) -> Iterator[Import]:
    for importer, path in known.items():
        yield from _walk(ast.parse(path.read_text(encoding="utf-8")), None, importer, known)


def _walk(node: ast.AST, late: str | None, importer: str, known: Mapping[str, Path]) -> Iterator[Import]:
    for child in ast.iter_child_nodes(node):
        here = late
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            here = here or "function"
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            here = "TYPE_CHECKING"
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            for target in _targets(child, known, importer):
                if target in known and target != importer:
                    yield Import(importer, target, child.lineno, here)
        yield from _walk(child, here, importer, known)


def graph(found: Iterable[Import]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for item in found:
        edges.setdefault(item.importer, set()).add(item.imported)
    return edges


def circles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iteratively so that a
    deep chain cannot hit the recursion limit), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    nodes = sorted(set(edges) | {t for targets in edges.values() for t in targets})
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work.append((start, iter(sorted(edges.get(start, ())))))
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def room(module: str) -> str:
    """A module's room: its package and first folder (``memory.tree.row`` -> ``memory.tree``);
    a top-level module is a room of its own (``memory.engine``)."""
    return ".".join(module.split(".")[:2])


def rooms(edges: Mapping[str, set[str]]) -> dict[str, set[str]]:
    between: dict[str, set[str]] = {}
    for importer, targets in edges.items():
        for target in targets:
            if room(importer) != room(target):
                between.setdefault(room(importer), set()).add(room(target))
    return between
