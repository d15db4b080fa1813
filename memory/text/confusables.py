"""Unicode's confusables data (UTS #39, ``confusables.txt``): which characters a reader takes
for which.

The file is vendored verbatim in ``memory/text/data`` (see ``memory/text/data/README.md`` for where it
comes from, its version and its licence). A character's *skeleton* is UTS #39's: the text's
canonical decomposition (NFD), each character replaced by its prototype from the file, and NFD
again. Two strings with the same skeleton look alike; ``∶`` (RATIO), ``꞉`` and ``ː`` all have
the skeleton ``:``.

The file and Python's ``unicodedata`` may be of different Unicode versions (Python 3.11 ships
14.0, the file is 15.0). A character the file maps but Python does not know yet keeps the
file's prototype (Python decomposes it to itself), so it still counts as the look-alike it is;
a character newer than the file has no prototype and is only itself. Nothing is computed at
import: the table is read on first use (~20 ms), once per process.
"""

from __future__ import annotations

import operator
import re
import sys
import unicodedata
from collections.abc import Callable
from functools import cache, partial
from importlib import resources
from itertools import compress

DATA_FILE = "confusables.txt"
_LINE = re.compile(r"^([0-9A-F]{4,6}) ;\t([0-9A-F ]+?) ;\t")
_VERSION = re.compile(r"^# Version: (\S+)", re.MULTILINE)


def _text() -> str:
    return resources.files("memory.text").joinpath("data", DATA_FILE).read_text(encoding="utf-8-sig")


@cache
def version() -> str:
    """The Unicode version of the vendored file (its ``# Version:`` line)."""
    found = _VERSION.search(_text())
    if found is None:
        raise RuntimeError(f"memory/text/data/{DATA_FILE} has no '# Version:' line")
    return found.group(1)


@cache
def prototypes() -> dict[str, str]:
    """Each mapped character and its prototype, as the file lists them."""
    table: dict[str, str] = {}
    for line in _text().splitlines():
        match = _LINE.match(line)
        if match:
            source, target = match.groups()
            table[chr(int(source, 16))] = "".join(chr(int(cp, 16)) for cp in target.split())
    if len(table) < 6000:  # 15.0 has 6,311 mappings: a cut or foreign file must not pass
        raise RuntimeError(f"memory/text/data/{DATA_FILE} holds only {len(table)} mappings")
    return table


def skeleton(text: str) -> str:
    """UTS #39 skeleton: NFD, every character by its prototype, NFD."""
    table = prototypes()
    mapped = "".join(table.get(ch, ch) for ch in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


@cache
def changed_skeletons() -> dict[str, str]:
    """Every character whose skeleton is not the character itself, and that skeleton. Only
    a mapped character or one with a canonical decomposition can have one: the others are
    their own skeleton (so the scan is a check of NFD per code point, ~0.1 s)."""
    chars = list(map(chr, range(sys.maxunicode + 1)))
    decomposed = map(operator.not_, map(partial(unicodedata.is_normalized, "NFD"), chars))
    candidates = set(prototypes()) | set(compress(chars, decomposed))
    out: dict[str, str] = {}
    for c in candidates:
        s = skeleton(c)
        if s != c:
            out[c] = s
    return out


@cache
def by_skeleton() -> dict[str, frozenset[str]]:
    """The characters of :func:`changed_skeletons` grouped by skeleton."""
    groups: dict[str, set[str]] = {}
    for c, s in changed_skeletons().items():
        groups.setdefault(s, set()).add(c)
    return {s: frozenset(chars) for s, chars in groups.items()}


def look_alikes(test: Callable[[str], bool]) -> frozenset[str]:
    """Every character whose skeleton passes ``test`` (the characters that are their own
    skeleton are not listed: the caller tests those directly)."""
    return frozenset(c for c, s in changed_skeletons().items() if test(s))
