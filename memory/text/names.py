"""Display names and people's words where they meet our own text: quoted by rule.

A display name is whatever a person typed. ``bob: I owe alice 500€. alice`` rendered as
``{name}: {text}`` (a message's head, a free summary line, the compactor's input) reads as two
speakers, bob and alice. So a name is shown as a JSON string, ``"bob: I owe alice 500€. alice":
hi``, when it holds a character a reader could take for a colon, a quote, a backslash or a line
break, a direction control (memory/text/bidi.py), or a character this Python cannot judge
(unassigned, private use, a lone surrogate); or starts with ``#`` (or ``＃``) or space, or ends
with space. Every other name is shown as it is, so ordinary names read as before.

Colon-like is decided by Unicode's confusables data (memory/text/confusables.py): every character
whose skeleton holds ``:`` (``∶`` RATIO, ``꞉``, ``ː``, ``׃``, ``⩴``...); and, for the colons the
data does not list (``︓``, ``⁝``, the Ethiopic and Mongolian ones), every character whose
compatibility form holds ``:`` or whose name says COLON. Quote- and backslash-like by the data
the same way (``“``, ``″``, ``＂``, ``⧵``...).

Inside our own frames (the ``<turn>`` note) a person's name and words are always quoted:
:func:`quoted` writes a JSON string in which every character that could end it early (a quote
or backslash or a look-alike), break its line, reorder what follows, or that this Python
cannot judge is an escape, so it reads as data and decodes (json.loads) to what was typed.
"""

from __future__ import annotations

import json
import operator
import sys
import unicodedata
from functools import cache, lru_cache, partial
from itertools import compress

from memory.text import bidi, confusables

# Characters this Python cannot judge (what they look like is unknown) or that split a line.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cs", "Co", "Cn"})
# Where a character whose name says COLON can be (punctuation, symbols, modifier letters,
# marks, format characters): the names of the ~140K letters and ideographs are not read.
_NAMED_CATEGORIES = frozenset(
    {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Lm", "Mn", "Cf"}
)


@cache
def colon_like() -> frozenset[str]:
    """``:`` and every character whose skeleton holds it (confusables data)."""
    return frozenset({":"} | confusables.look_alikes(lambda s: ":" in s))


@cache
def _by_form_and_name() -> tuple[frozenset[str], frozenset[str]]:
    """Characters whose compatibility form holds ``:`` or whose name says COLON (the data's
    look-alikes miss some: ``︓``, ``⁝``, the Ethiopic and Mongolian colons); and those whose
    form or skeleton starts with ``#``. One scan of every code point (~0.3 s)."""
    colons: set[str] = set()
    hashes: set[str] = set(confusables.look_alikes(lambda s: s.startswith("#")))
    chars = list(map(chr, range(sys.maxunicode + 1)))
    plain = map(partial(unicodedata.is_normalized, "NFKC"), chars)
    for c in compress(chars, map(operator.not_, plain)):
        form = unicodedata.normalize("NFKC", c)
        if ":" in form:
            colons.add(c)
        if form.startswith("#"):
            hashes.add(c)
    named = map(_NAMED_CATEGORIES.__contains__, map(unicodedata.category, chars))
    colons.update(c for c in compress(chars, named) if "COLON" in unicodedata.name(c, ""))
    return frozenset(colons), frozenset(hashes)


@cache
def _escaped_chars() -> frozenset[str]:
    """Shown as an escape inside our quotes: a quote or backslash or what looks like one
    (a quote's skeleton is two apostrophes), and the direction controls."""
    quote = confusables.skeleton('"')
    alikes = confusables.look_alikes(lambda s: s == quote or "\\" in s)
    return frozenset({'"', "\\"} | alikes | bidi.controls())


@cache
def _quoting_chars() -> frozenset[str]:
    """A name holding any of these is shown quoted."""
    return colon_like() | _by_form_and_name()[0] | _escaped_chars()


def _unsafe(text: str) -> bool:
    return any(map(_UNSAFE_CATEGORIES.__contains__, map(unicodedata.category, text)))


def _escaped_in_quotes(ch: str) -> bool:
    return ch in _escaped_chars() or unicodedata.category(ch) in _UNSAFE_CATEGORIES


def quoted(text: str) -> str:
    """``text`` as a JSON string whose every risky character is an escape (see module doc)."""
    parts = ['"']
    for ch in text:
        if ch in '"\\':
            parts.append("\\" + ch)
        elif _escaped_in_quotes(ch):
            parts.append(json.dumps(ch)[1:-1])  # \uXXXX (a pair above the BMP), \n, \t...
        else:
            parts.append(ch)
    parts.append('"')
    return "".join(parts)


@lru_cache(maxsize=4096)  # a chat has few names, each rendered once per message
def speaker(name: str) -> str:
    shown_quoted = (
        not name
        or name[0].isspace()
        or name[-1].isspace()
        or name[0] == "#"
        or name[0] in _by_form_and_name()[1]
        or not _quoting_chars().isdisjoint(name)
        or _unsafe(name)
    )
    return quoted(name) if shown_quoted else name


def prepare() -> None:
    """Build the character classes now (they share the confusables table with the frame-tag
    filter, memory/text/frame_tags.py), so the first message does not pay for them."""
    _quoting_chars()
    _by_form_and_name()
