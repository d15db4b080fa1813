"""Frame tags no message can forge, found by rule rather than by a list of known tricks.

Our prompts frame data in tags (``<memory>``, ``<tail>``, ``<turn>``, ``<chat>``, ``<input>``,
``<out>``). A message that holds one could close the frame early and pose as instructions.
A reader (a model) takes a tag for a tag even when it is dressed up, so a tag here is:

- any ``<``-like character: its compatibility decomposition holds ``<`` (``＜``, ``﹤``,
  ``≮``), its Unicode name says LESS-THAN, or a left-pointing ANGLE, ARROWHEAD or CHEVRON
  (``‹``, ``〈``, ``⟨``, ``˂``, ``❮``), or it is one of the letters Unicode's confusables
  table maps to ``<`` (``ᐸ``, ``ᚲ``, ``𝈶``);
- then, in any amount between every character that follows, characters a reader does not
  see: controls, format characters (zero-width, direction marks, tag characters), all
  spaces and line separators, combining marks (variation selectors among them), unassigned
  code points, and blank letters (Hangul fillers, braille blank);
- an optional ``/``-like character (``/``, ``／``, any SOLIDUS);
- a frame name, each letter also matched by its compatibility forms (``ｍ``, ``𝐦``) and
  the Cyrillic and Greek letters that look the same (``е``, ``о``, ``ѕ``...), in any case.

Such a tag has its first character replaced by ``&lt;``: an escaped bracket, which reads as
the literal text it is and is not ``<``-like itself (so neutralizing twice changes nothing).
The character classes come from the ``unicodedata`` tables of the running Python, computed
once on first use (~0.2 s): only the Basic and Supplementary Multilingual Planes and the
tag plane hold such characters; the ideograph planes are left out of the scan.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import cache

FRAME_NAMES = ("attachment", "chat", "input", "memory", "out", "tail", "turn")
ESCAPED = "&lt;"

# Unicode's confusables.txt maps these to "<" (letters and symbols whose names do not say so).
_LESS_CONFUSABLES = "\u1438\u16b2\U0001d236"
# Letters that look like the Latin ones of our frame names (confusables.txt, lowercase and
# capital forms; a tag name is read case-insensitively).
_LETTER_LOOKALIKES = {
    "a": "\u0430\u0251\u03b1\u0410\u0391",
    "c": "\u0441\u03f2\u0421\u03f9",
    "e": "\u0435\u0415\u0395",
    "h": "\u04bb\u041d\u0397",
    "i": "\u0456\u0131\u0269\u03b9\u0406\u0399\u04c0",
    "l": "\u04cf\u0406\u0399\u04c0\u01c0",
    "m": "\u041c\u039c",
    "n": "\u039d",
    "o": "\u043e\u03bf\u041e\u039f\u0585",
    "p": "\u0440\u03c1\u0420\u03a1",
    "r": "\u0433",
    "t": "\u0422\u03a4",
    "u": "\u03c5\u057d",
    "y": "\u0443\u0423\u03a5",
}
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Zs", "Zl", "Zp", "Mn", "Me"})
_BLANK_NAMES = ("FILLER", "BRAILLE PATTERN BLANK")
_LESS_NAME = re.compile(
    r"LESS-THAN|\bLEFT\b.*\b(ANGLE|ARROWHEAD|CHEVRON)\b|\b(ANGLE|ARROWHEAD|CHEVRON)\b.*\bLEFT\b"
)
# Scanned: the BMP and SMP without their CJK ideograph and Hangul syllable blocks (no tricks
# there, 60K names skipped), and the tag plane. The skipped blocks hold no hidden character.
_SCANNED = (
    range(0x0000, 0x3400),
    range(0xA000, 0xAC00),
    range(0xD7A4, 0x20000),
    range(0xE0000, 0xE1000),
)
# Categories whose characters can look like "<", "/" or a letter, or be blank letters.
_CASED_LETTERS = frozenset({"Lu", "Ll", "Lt"})
_NAMED_CATEGORIES = frozenset(
    {"Lu", "Ll", "Lt", "Lm", "Lo", "Sm", "So", "Sk", "Ps", "Pe", "Pi", "Pf", "Po", "Pd"}
)


def _code_points() -> Iterable[str]:
    for block in _SCANNED:
        for cp in block:
            yield chr(cp)


def _char_class(chars: Iterable[str]) -> str:
    """A regex character class of ``chars``, as ranges."""
    points = sorted({ord(c) for c in chars})
    parts: list[str] = []
    k = 0
    while k < len(points):
        first = last = points[k]
        while k + 1 < len(points) and points[k + 1] == last + 1:
            k += 1
            last = points[k]
        parts.append(re.escape(chr(first)) + ("" if first == last else "-" + re.escape(chr(last))))
        k += 1
    return "[" + "".join(parts) + "]"


@cache
def _pattern() -> re.Pattern[str]:
    hidden: set[str] = set()
    less: set[str] = set(_LESS_CONFUSABLES)
    slash: set[str] = {"/"}
    letters: dict[str, set[str]] = {
        ch: {ch, ch.upper(), *_LETTER_LOOKALIKES.get(ch, "")} for ch in "".join(FRAME_NAMES)
    }
    for c in _code_points():
        category = unicodedata.category(c)
        if category in _HIDDEN_CATEGORIES:
            hidden.add(c)
            # A combining LEFT ANGLE drawn over the character before it opens a tag too.
            if category in ("Mn", "Me") and _LESS_NAME.search(unicodedata.name(c, "")):
                less.add(c)
            continue
        if category not in _NAMED_CATEGORIES:
            continue
        folded = unicodedata.normalize("NFKD", c)
        key = folded.casefold()
        if key in letters:
            letters[key].add(c)
        if category in _CASED_LETTERS:
            continue  # a Latin, Greek or Cyrillic letter is never a bracket or a blank
        name = unicodedata.name(c, "")
        if any(blank in name for blank in _BLANK_NAMES):
            hidden.add(c)
        elif "<" in folded or _LESS_NAME.search(name):
            less.add(c)
        elif folded == "/" or "SOLIDUS" in name:
            slash.add(c)
    invisible = _char_class(hidden)
    gap = invisible + "*"
    names = "|".join(gap.join(_char_class(letters[ch]) for ch in name) for name in FRAME_NAMES)
    # The name ends where no visible word character follows at once (a Hangul filler counts
    # as a letter to \w): "<memoryx" is no tag; "<memory\u3164>" and '<out n="1">' are.
    end = f"(?!(?!{invisible})\\w)"
    tag = f"{_char_class(less)}{gap}(?:{_char_class(slash)}{gap})?(?:{names}){end}"
    return re.compile(tag, re.IGNORECASE)


def neutralize_frames(text: str) -> str:
    """Make text unable to open or close one of our frames (``<chat>``, ``</memory>``...)."""
    return _pattern().sub(lambda m: ESCAPED + m.group(0)[1:], text)


def prepare() -> None:
    """Build the filter now (~0.1 s idle, up to 0.85 s on a loaded 2-core machine). The
    engine calls this when it is made, so that the first message does not pay for it inside
    the bot's event loop, stalling ingest and replies; nothing is built at import."""
    _pattern()
