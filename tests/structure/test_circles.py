"""No import circle in bot/, memory/ and bench/: neither between modules nor between rooms
(the folders of docs/design.md, "Architecture"). The checker is first shown to find circles
however they are hidden, on a small tree of its own."""

from __future__ import annotations

from pathlib import Path

from tests.structure.imports import circles, graph, imports, modules, rooms

REPO = Path(__file__).resolve().parents[2]


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checker_finds_circles_hidden_in_functions_and_type_checking(tmp_path: Path) -> None:
    write(tmp_path, {
        "bot/__init__.py": "",
        "bot/a.py": "from bot import b\n",
        "bot/b.py": "def later():\n    from bot.a import thing\n",
        "bot/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import bot.d\n",
        "bot/d.py": "from bot.c import x\n",
        "bot/e.py": "from bot import a\n",  # on the way into a circle, not in one
        "bot/room/__init__.py": "",
        "bot/room/f.py": "from bot.g import y\n",
        "bot/g.py": "from .room import f\n",
    })  # fmt: skip
    known = modules(tmp_path, ["bot"])
    found = list(imports(known))
    assert circles(graph(found)) == [["bot.a", "bot.b"], ["bot.c", "bot.d"], ["bot.g", "bot.room.f"]]
    assert {(i.importer, i.imported, i.late) for i in found if i.late} == {
        ("bot.b", "bot.a", "function"),
        ("bot.c", "bot.d", "TYPE_CHECKING"),
    }


def test_the_checker_finds_a_circle_between_rooms_that_no_module_closes(tmp_path: Path) -> None:
    write(tmp_path, {
        "memory/__init__.py": "",
        "memory/tree/__init__.py": "",
        "memory/tree/render.py": "from memory.compaction.prompts import neutralize\n",
        "memory/compaction/__init__.py": "",
        "memory/compaction/prompts.py": "",
        "memory/compaction/planner.py": "from memory.tree import render\n",
    })  # fmt: skip
    edges = graph(imports(modules(tmp_path, ["memory"])))
    assert circles(edges) == []
    assert circles(rooms(edges)) == [["memory.compaction", "memory.tree"]]


def test_no_module_imports_itself_back() -> None:
    known = modules(REPO)
    assert len(known) > 100, len(known)  # the walk really read the three packages (146 modules)
    assert circles(graph(imports(known))) == []


def test_no_room_imports_itself_back() -> None:
    edges = rooms(graph(imports(modules(REPO))))
    assert {"memory.tree", "memory.storage", "bot.gateway", "bot.reply", "bench.replay"} <= set(edges)
    assert circles(edges) == []
