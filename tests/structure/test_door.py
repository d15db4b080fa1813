"""The door of the memory (memory/__init__.py): bot/ and bench/ import only its names and the
modules it lists in PUBLIC_MODULES. The rule is first shown to catch a forbidden import."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import memory
from tests.structure.imports import imports, modules

REPO = Path(__file__).resolve().parents[2]


def public(module: str, public_modules: Iterable[str]) -> bool:
    return module == "memory" or any(module == p or module.startswith(p + ".") for p in public_modules)


def behind_the_door(known: Mapping[str, Path], public_modules: Iterable[str]) -> list[str]:
    """Every import by bot/ or bench/ of a memory module that is not public."""
    return sorted(
        f"{i.importer} imports {i.imported} (line {i.line})"
        for i in imports(known)
        if i.importer.split(".")[0] in {"bot", "bench"}
        and i.imported.split(".")[0] == "memory"
        and not public(i.imported, public_modules)
    )


def names_not_in_the_door(known: Mapping[str, Path], exported: Iterable[str]) -> list[str]:
    """``from memory import X`` where X is neither in ``__all__`` nor a public module."""
    allowed = set(exported)
    wrong = []
    for name, path in known.items():
        if name.split(".")[0] not in {"bot", "bench"}:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "memory" and node.level == 0:
                wrong += [f"{name} imports memory.{a.name}" for a in node.names if a.name not in allowed]
    return sorted(wrong)


def test_the_rule_catches_an_import_behind_the_door(tmp_path: Path) -> None:
    for name, text in {
        "bot/__init__.py": "",
        "bot/a.py": "from memory import MemoryEngine, errors\nfrom memory.text.names import quoted\n",
        "bot/b.py": "def late():\n    from memory.storage.log import append\n",
        "bot/c.py": "from memory import prompt_view\n",
        "memory/__init__.py": "",
        "memory/errors.py": "",
        "memory/text/__init__.py": "",
        "memory/text/names.py": "",
        "memory/storage/__init__.py": "",
        "memory/storage/log.py": "",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    known = modules(tmp_path, ["bot", "memory"])
    assert behind_the_door(known, ["memory.errors", "memory.text"]) == [
        "bot.b imports memory.storage.log (line 2)"
    ]
    assert names_not_in_the_door(known, ["MemoryEngine", "errors"]) == ["bot.c imports memory.prompt_view"]


def test_bot_and_bench_import_only_the_door() -> None:
    known = modules(REPO)
    assert behind_the_door(known, memory.PUBLIC_MODULES) == []
    assert names_not_in_the_door(known, memory.__all__) == []


def test_every_public_module_and_name_exists() -> None:
    known = modules(REPO)
    assert all(m in known for m in memory.PUBLIC_MODULES), memory.PUBLIC_MODULES
    assert all(hasattr(memory, name) for name in memory.__all__)
