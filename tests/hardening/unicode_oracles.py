"""The framing tests' oracles: which characters a reader takes for ``:``, ``"``, ``<``, which it
does not see, and which reorder what follows. None comes from memory's own tables (its vendored
confusables.txt 15.0, Python's unicodedata 14.0): each class is the union of

- a short list of known characters, each checked by hand in Unicode's code charts (and against
  the data by test_frame_rules.py::test_the_known_look_alikes_are_what_the_unicode_data_says);
- another build of the confusables data, the ``confusable-homoglyphs`` package (its own JSON,
  derived from confusables.txt by its own script, undated, read through its own table);
- another Unicode database, ``unicodedata2`` (18.0 at the time of writing), for names,
  compatibility forms and categories;
- the bidi algorithm of ``python-bidi`` (the Rust unicode-bidi crate) for direction.

Every class is found by a scan of all code points (0 to sys.maxunicode), once per test session.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from functools import cache

import unicodedata2 as ucd
from bidi import get_display
from confusable_homoglyphs import confusables as homoglyph_package

__all__ = ["get_display", "ucd"]

# Colon look-alikes, from the code charts (confusables.txt maps each to ":" or to text with ":").
KNOWN_COLONS = {
    "\u02d0": "MODIFIER LETTER TRIANGULAR COLON",
    "\u02f8": "MODIFIER LETTER RAISED COLON",
    "\u0589": "ARMENIAN FULL STOP",
    "\u05c3": "HEBREW PUNCTUATION SOF PASUQ",
    "\u0703": "SYRIAC SUPRALINEAR COLON",
    "\u0704": "SYRIAC SUBLINEAR COLON",
    "\u0903": "DEVANAGARI SIGN VISARGA",
    "\u0a83": "GUJARATI SIGN VISARGA",
    "\u16ec": "RUNIC MULTIPLE PUNCTUATION",
    "\u1803": "MONGOLIAN FULL STOP",
    "\u1809": "MONGOLIAN MANCHU FULL STOP",
    "\u205a": "TWO DOT PUNCTUATION",
    "\u2236": "RATIO",
    "\ua4fd": "LISU LETTER TONE MYA JEU",
    "\ua789": "MODIFIER LETTER COLON",
    "\ufe30": "PRESENTATION FORM FOR VERTICAL TWO DOT LEADER",
    "\uff1a": "FULLWIDTH COLON",
    "\u2a74": "DOUBLE COLON EQUAL",
    "\u29f4": "RULE-DELAYED",
}
# Left angles, chevrons and arrowheads a reader may take for "<".
KNOWN_LESS = {
    "<": "LESS-THAN SIGN",
    "\uff1c": "FULLWIDTH LESS-THAN SIGN",
    "\ufe64": "SMALL LESS-THAN SIGN",
    "\u2039": "SINGLE LEFT-POINTING ANGLE QUOTATION MARK",
    "\u276e": "HEAVY LEFT-POINTING ANGLE QUOTATION MARK ORNAMENT",
    "\u02c2": "MODIFIER LETTER LEFT ARROWHEAD",
    "\u1438": "CANADIAN SYLLABICS PA",
    "\u16b2": "RUNIC LETTER KAUNA",
    "\U0001d236": "GREEK INSTRUMENTAL NOTATION SYMBOL-40",
    "\u3008": "LEFT ANGLE BRACKET",
    "\u2329": "LEFT-POINTING ANGLE BRACKET",
    "\u27e8": "MATHEMATICAL LEFT ANGLE BRACKET",
    "\u2991": "LEFT ANGLE BRACKET WITH DOT",
    "\u29fc": "LEFT-POINTING CURVED ANGLE BRACKET",
    "\u2b9c": "BLACK LEFTWARDS EQUILATERAL ARROWHEAD",
    "\u2b98": "THREE-D TOP-LIGHTED LEFTWARDS EQUILATERAL ARROWHEAD",
    "\U0001f890": "LEFTWARDS TRIANGLE ARROWHEAD",
    "\u226a": "MUCH LESS-THAN",
    "\u226e": "NOT LESS-THAN",
    "\u22d6": "LESS-THAN WITH DOT",
    "\u1444": "CANADIAN SYLLABICS PWA",
}
# PropList.txt's Bidi_Control: every character that embeds, overrides, isolates or marks direction.
KNOWN_BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
PRIVATE_USE = (range(0xE000, 0xF900), range(0xF0000, 0xFFFFE), range(0x100000, 0x10FFFE))
SURROGATES = range(0xD800, 0xE000)
REPLACEMENT = "\ufffc\ufffd"  # OBJECT REPLACEMENT CHARACTER, REPLACEMENT CHARACTER
_MARKS = re.compile("[\u200e\u200f]")  # the package keeps direction marks around RTL characters
_LEFT_WORDS = ("LEFT", "LEFTWARDS", "LEFT-POINTING")
_ANGLE_WORDS = ("ANGLE", "ARROWHEAD", "ARROWHEADS", "CHEVRON")


def code_points() -> map[str]:
    return map(chr, range(sys.maxunicode + 1))


@cache
def _homoglyphs() -> dict[str, frozenset[str]]:
    """The package's table, direction marks stripped: each single character and the texts it
    is confusable with."""
    table: dict[str, frozenset[str]] = {}
    for key, found in homoglyph_package.confusables_data.items():
        char = _MARKS.sub("", key)
        if len(char) == 1:
            table[char] = frozenset(_MARKS.sub("", h["c"]) for h in found) | table.get(char, frozenset())
    return table


def homoglyphs(c: str) -> frozenset[str]:
    return _homoglyphs().get(c, frozenset())


def is_left_angle_name(name: str) -> bool:
    words = name.split(" ")
    return "LESS-THAN" in name or (
        any(w in _LEFT_WORDS for w in words) and any(w in _ANGLE_WORDS for w in words)
    )


@dataclass(frozen=True)
class Classes:
    colons: frozenset[str]
    quotes: frozenset[str]  # a quotation mark and what a reader takes for one
    hidden: frozenset[str]
    less: frozenset[str]


@cache
def classes() -> Classes:
    """One scan of every code point (~3 s)."""
    colons, quotes, less = set(KNOWN_COLONS), {'"'}, set(KNOWN_LESS)
    # What a reader does not see, or cannot know: format characters and spaces, variation
    # selectors and blank letters, unassigned and private-use code points, surrogates and the
    # replacement characters.
    hidden = set(REPLACEMENT)
    hidden.update(chr(cp) for block in (*PRIVATE_USE, SURROGATES) for cp in block)
    for c in code_points():
        name = ucd.name(c, "")
        nfkc = ucd.normalize("NFKC", c)
        alike = homoglyphs(c)
        if any(":" in h for h in alike) or ":" in nfkc or "COLON" in name:
            colons.add(c)
        if "''" in alike or nfkc == '"':  # the package pairs a quotation mark with ''
            quotes.add(c)
        if any("<" in h for h in alike) or "<" in nfkc or is_left_angle_name(name):
            less.add(c)
        if (
            ucd.category(c) in ("Cf", "Zs", "Cn", "Co")
            or "VARIATION SELECTOR" in name
            or "FILLER" in name
            or name in ("BRAILLE PATTERN BLANK", "COMBINING GRAPHEME JOINER")
        ):
            hidden.add(c)
    # An invisible "<" (U+E003C TAG LESS-THAN SIGN) is skipped by a reader, not read as "<".
    return Classes(frozenset(colons), frozenset(quotes), frozenset(hidden), frozenset(less - hidden))


def unknown_to_this_python() -> frozenset[str]:
    """Characters the newer database assigns and Python's own does not (yet)."""
    import unicodedata

    return frozenset(
        c
        for c in code_points()
        if unicodedata.category(c) == "Cn" and ucd.category(c) not in ("Cn", "Co", "Cs")
    )


def speaker_of(head: str) -> str:
    """The speaker a reader takes from ``{name}: {text}``. A name that starts with a quotation
    mark (or what looks like one) is a JSON string, ended by the first quote-like character
    that is not escaped, which must be a real ``"`` followed by a real ``:``; any other name is
    everything before the first colon-like character."""
    k = classes()
    if head[:1] in k.quotes:
        i = 1
        while i < len(head) and head[i] not in k.quotes:
            i += 2 if head[i] == "\\" else 1
        assert head[i : i + 2] == '":', f"the name's quotes do not end where they seem to: {head!r}"
        return str(json.loads(head[: i + 1]))
    cut = min((i for i, c in enumerate(head) if c in k.colons), default=len(head))
    return head[:cut]


def json_strings(text: str) -> tuple[str, list[str]]:
    """``text`` with each JSON string literal in it replaced by ``Q``, and the literals' values.
    A quote look-alike or a direction control inside a literal fails: a reader could end the
    string there or see it reordered."""
    k = classes()
    values: list[str] = []

    def take(match: re.Match[str]) -> str:
        literal = match.group(0)
        assert not [c for c in literal[1:-1] if c in k.quotes - {'"'} or c in KNOWN_BIDI_CONTROLS], literal
        values.append(str(json.loads(literal)))
        return "Q"

    return re.sub(r'"(?:[^"\\]|\\.)*"', take, text), values
