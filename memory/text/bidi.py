r"""Direction controls in chat text we frame: shown as escapes, never obeyed.

A right-to-left override (U+202E) in a name or a message reverses everything after it up to the
end of the line, so ``bob\u202e: hi`` shows as ``bob :ih`` and a reader (a person in Discord, a
log viewer) sees the frame's order bent. In every frame we build, each such control is replaced
by its escape, the six characters ``\u202e``: visible, inert, and the same escape JSON uses, so
a quoted name (memory/text/names.py) still decodes to the name as typed.

Which characters: every character with an explicit bidi class (embeddings LRE/RLE, overrides
LRO/RLO, isolates LRI/RLI/FSI, their ends PDF/PDI), and the invisible direction marks (format
characters Cf of a strong class whose name says MARK: LRM, RLM, the Arabic letter mark, and the
Syriac abbreviation mark, which acts as one). Taken from the running Python's ``unicodedata``
once, on first use.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache
from itertools import compress

_EXPLICIT = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})
_STRONG = frozenset({"L", "R", "AL"})


def _is_control(c: str) -> bool:
    direction = unicodedata.bidirectional(c)
    return direction in _EXPLICIT or (direction in _STRONG and "MARK" in unicodedata.name(c, ""))


@cache
def controls() -> frozenset[str]:
    # UAX #9's explicit formatting characters are all format characters (Cf), like the marks:
    # every code point's category is read (~0.1 s; a later Unicode may add controls anywhere),
    # then the ~170 format characters are judged.
    chars = list(map(chr, range(sys.maxunicode + 1)))
    formats = compress(chars, map("Cf".__eq__, map(unicodedata.category, chars)))
    return frozenset(c for c in formats if _is_control(c))


@cache
def _pattern() -> re.Pattern[str]:
    return re.compile("[" + "".join(re.escape(c) for c in sorted(controls())) + "]")


def escape(c: str) -> str:
    """A BMP character as JSON's ``\\uXXXX`` escape."""
    return f"\\u{ord(c):04x}"


def neutralize_bidi(text: str) -> str:
    """``text`` with every direction control shown as its escape."""
    return _pattern().sub(lambda m: escape(m.group(0)), text)
