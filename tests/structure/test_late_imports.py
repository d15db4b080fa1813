"""No function-level and no TYPE_CHECKING import of a project module, except those
docs/design.md lists with their reason (section "Imports made late, and why"), and that list
holds no entry the code no longer has."""

from __future__ import annotations

import re
from pathlib import Path

from tests.structure.imports import imports, modules

REPO = Path(__file__).resolve().parents[2]
HEADING = "### Imports made late, and why"


def listed(design: str) -> set[tuple[str, str]]:
    """The ``- `a` imports `b` late: why`` lines under the heading, up to the next heading."""
    _, found, rest = design.partition(HEADING)
    assert found, f"docs/design.md has no {HEADING!r}"
    section = re.split(r"\n#{1,4} ", rest, maxsplit=1)[0]
    return set(re.findall(r"^- `([\w.]+)` imports `([\w.]+)` late: \S", section, flags=re.MULTILINE))


def test_the_list_is_read_from_its_own_section() -> None:
    design = f"{HEADING}\n\n- `bot.a` imports `bot.b` late: start-up time.\n- `x` imports `y` late:\n\n## Next\n- `bot.c` imports `bot.d` late: no.\n"
    assert listed(design) == {("bot.a", "bot.b")}


def test_late_imports_are_the_listed_ones() -> None:
    found = {(i.importer, i.imported) for i in imports(modules(REPO)) if i.late}
    allowed = listed((REPO / "docs" / "design.md").read_text(encoding="utf-8"))
    assert sorted(found - allowed) == [], "late imports docs/design.md does not list"
    assert sorted(allowed - found) == [], "docs/design.md lists late imports the code no longer has"
