r"""Frame tags no message can forge, found by rule rather than by a list of known tricks.

Our prompts frame data in tags (``<people>``, ``<memory>``, ``<tail>``, ``<turn>``, ``<chat>``, ``<input>``,
``<out>``). A message that holds one could close the frame early and pose as instructions.
A reader (a model) takes a tag for a tag even when it is dressed up, so a tag here is:

- any ``<``-like character: its confusable skeleton (Unicode's confusables data, memory/
  confusables.py) or its compatibility decomposition holds ``<`` (``‹``, ``❮``, ``ᐸ``, ``ᚲ``,
  ``≪``, ``＜``, ``﹤``, ``≮``), or its Unicode name says LESS-THAN, or a LEFT, LEFTWARDS or
  LEFT-POINTING angle, arrowhead, chevron or triangle (``〈``, ``⟨``, ``˂``, ``⮜``, ``◁``), or
  it is a code point whose look this Python cannot know (unassigned, private use, a lone
  surrogate: a later Unicode or a font may draw a ``<`` there);
- then, in any amount between every character that follows, characters a reader does not
  see or cannot know: controls, format characters (zero-width, direction marks, tag
  characters), all spaces and line separators, combining marks (variation selectors among
  them), blank letters (Hangul fillers, braille blank), private-use and unassigned code points
  and lone surrogates (what they show is up to a font, or nothing), and the replacement
  characters ``\ufffd`` and ``\ufffc`` (what a broken or dropped character is stored as);
- an optional ``/``-like character (``/``, ``／``, any SOLIDUS, any character whose skeleton
  is ``/`` such as ``⁄`` or ``ノ``);
- a frame name, each letter also matched by its compatibility forms (``ｍ``, ``𝐦``) and by
  every character whose skeleton is the letter's, small or capital (``е``, ``о``, ``ѕ``,
  ``М``, ``1`` for ``l``...), in any case.

Such a tag has its first character replaced by ``&lt;``: an escaped bracket, which reads as
the literal text it is and is not ``<``-like itself (so neutralizing twice changes nothing).
Direction controls in the text become visible escapes too (memory/text/bidi.py). The character
classes come from the running Python's ``unicodedata`` and the vendored confusables data,
computed once on first use (every code point's category; names only outside the ideograph
blocks, which hold no such character). Where the two Unicode versions differ (Python 3.11 has
14.0, the data 15.0), a character this Python does not know is unassigned here: invisible and
an opener at once, the worst it could turn out to be.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from itertools import compress, groupby

from memory.text import bidi, confusables, names

FRAME_NAMES = ("attachment", "chat", "input", "memory", "out", "people", "tail", "turn")
ESCAPED = "&lt;"

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zs", "Zl", "Zp", "Mn", "Me"})
_BLANK_NAMES = ("FILLER", "BRAILLE PATTERN BLANK", "REPLACEMENT CHARACTER")
_LEFT = r"\bLEFT(?:WARDS)?\b"
_ANGLE = r"\b(?:ANGLE|ARROWHEADS?|CHEVRON|TRIANGLE)\b"
_LESS_NAME = re.compile(f"LESS-THAN|{_LEFT}.*{_ANGLE}|{_ANGLE}.*{_LEFT}")
# Looked up by name and decomposition: everything but the CJK ideograph and Hangul syllable
# blocks and the ideograph planes (no tricks there, ~160K names skipped; the confusables data
# still covers them, e.g. 丿 as "/"). Every code point's category is read.
_UNNAMED = (range(0x3400, 0xA000), range(0xAC00, 0xD7A4), range(0x20000, 0x40000))
# Unassigned, private use, surrogates: what such a code point looks like is unknown here.
_UNKNOWN_CATEGORIES = frozenset({"Cn", "Co", "Cs"})
_MARK_CATEGORIES = frozenset({"Mn", "Me"})
# Categories whose characters can look like "<", "/" or a letter, or be blank letters.
_CASED_LETTERS = frozenset({"Lu", "Ll", "Lt"})
_NAMED_CATEGORIES = frozenset(
    {"Lu", "Ll", "Lt", "Lm", "Lo", "Sm", "So", "Sk", "Ps", "Pe", "Pi", "Pf", "Po", "Pd"}
)
_GROUP = 16  # runs per group in the check of a character above U+FFFF (see _char_class)


def _segments() -> Iterable[tuple[range, bool]]:
    """Every code point in order, in runs that are or are not looked up by name."""
    start = 0
    for skipped in _UNNAMED:
        yield range(start, skipped.start), True
        yield skipped, False
        start = skipped.stop
    yield range(start, sys.maxunicode + 1), True


def _runs(points: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted code points as (first, last) runs."""
    return _merged((cp, cp) for cp in points)


def _merged(runs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for first, last in sorted(runs):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(last, out[-1][1]))
        else:
            out.append((first, last))
    return out


def _runs_of(segment: range, categories: list[str], wanted: frozenset[str]) -> Iterable[tuple[int, int]]:
    """The runs of ``segment`` whose category is in ``wanted`` (C-speed: ~1M code points)."""
    cp = segment.start
    for inside, group in groupby(map(wanted.__contains__, categories)):
        n = len(list(group))
        if inside:
            yield cp, cp + n - 1
        cp += n


def _char_class(runs: Iterable[tuple[int, int]], *, often: bool = False) -> str:
    """A regex matching one character of the code point runs.

    re tests a class that holds a character above U+FFFF range by range, so one class of ~900
    runs costs ~2 us per character of every text searched (205 us for a 100-character line).
    So the class is the BMP part plus the whole range above U+FFFF, a bitmap and one range
    (4 us for the line), and a character above U+FFFF is then checked against the real runs by
    a one-character lookbehind. A class tried at every character (``often``: the invisible
    ones the shadow is made with) checks them in groups of 16 runs, each behind a test of its
    span (an emoji costs ~1 us instead of 2); the others are tried only after an opener and
    stay one class each (a group is one more class to compile)."""
    low: list[str] = []
    high: list[tuple[int, int]] = []
    for a, b in runs:
        if a <= 0xFFFF:
            low.append(_span(a, min(b, 0xFFFF)))
        if b > 0xFFFF:
            high.append((max(a, 0x10000), b))
    if not high:
        return "[" + "".join(low) + "]"
    groups = [high[k : k + _GROUP] for k in range(0, len(high), _GROUP)] if often else [high]
    checks = "|".join(
        (f"(?=[{_span(g[0][0], g[-1][1])}])" if often else "") + f"[{''.join(_span(a, b) for a, b in g)}]"
        for g in groups
    )
    return f"[{''.join(low)}\\U00010000-\\U0010ffff](?<=[\\x00-\\uffff]|{checks})"


def _span(a: int, b: int) -> str:
    return re.escape(chr(a)) + ("" if a == b else "-" + re.escape(chr(b)))


def _class_of(chars: Iterable[str]) -> str:
    return _char_class(_runs(ord(c) for c in chars))


def _letter_classes() -> dict[str, set[str]]:
    """Each letter of our frame names, small and capital, and every character whose confusable
    skeleton is the same as one of the two (the skeleton itself among them: ``l`` for ``I``)."""
    by_skeleton = confusables.by_skeleton()
    letters: dict[str, set[str]] = {}
    for ch in "".join(FRAME_NAMES):
        letters[ch] = {ch, ch.upper()}
        for form in (ch, ch.upper()):
            shape = confusables.skeleton(form)
            letters[ch] |= by_skeleton.get(shape, frozenset()) | ({shape} if len(shape) == 1 else set())
    return letters


def _letter(ch: str, chars: set[str], gap: str) -> str:
    """One letter of a frame name: a character of its class, or a sequence its skeleton is
    (``m`` is ``rn`` to a reader)."""
    sequences = {confusables.skeleton(form) for form in (ch, ch.upper())} - {ch, ch.upper()}
    longer = [gap.join(map(re.escape, s)) for s in sorted(sequences) if len(s) > 1]
    one = _class_of(_any_case(chars))
    return f"(?:{'|'.join([one, *longer])})" if longer else one


def _any_case(chars: set[str]) -> set[str]:
    """``chars`` and their small, capital and title forms: a tag's name is read in any case.
    (Spelled out instead of re.IGNORECASE, which makes every search 1.8x slower on these
    large classes: 15.7 against 8.6 us for a 100-character line.)"""
    out = set(chars)
    for c in chars:
        out.update(v for v in (c.lower(), c.upper(), c.title(), c.casefold()) if len(v) == 1)
    return out


@dataclass(frozen=True, slots=True)
class _Filter:
    """The shadow of a text has the same length, each invisible character above ASCII replaced
    by a stand-in: ``_GAP``, or ``_GAP_OPENER`` for one that also opens a tag (an unknown code
    point, a combining left angle). The tag pattern reads the shadow, so the gap between two
    letters is one small class (the stand-ins, and ASCII's space and controls) instead of a
    ~900-run class repeated 40 times: compiling those took ~0.5 s, and an ASCII text needs no
    shadow at all."""

    hidden: re.Pattern[str]  # invisible above ASCII, and no opener
    hidden_openers: re.Pattern[str]
    tag: re.Pattern[str]  # over the shadow

    def shadow(self, text: str) -> str:
        if text.isascii():
            return text
        return self.hidden_openers.sub(_GAP_OPENER, self.hidden.sub(_GAP, text))


# Each stands for itself too: a zero-width space is a gap, and U+FDD0 (a noncharacter, so
# unassigned) a gap that opens.
_GAP, _GAP_OPENER = "\u200b", "\ufdd0"


@cache
def _filter() -> _Filter:
    hidden: list[tuple[int, int]] = []
    unknown: list[tuple[int, int]] = []
    blanks: list[int] = []
    less: set[str] = set(confusables.look_alikes(lambda s: "<" in s))
    slash: set[str] = {"/"} | confusables.look_alikes(lambda s: s == "/")
    letters = _letter_classes()
    for segment, named in _segments():
        categories = list(map(unicodedata.category, map(chr, segment)))
        hidden += _runs_of(segment, categories, _HIDDEN_CATEGORIES)
        unknown += _runs_of(segment, categories, _UNKNOWN_CATEGORIES)
        if not named:
            continue
        chars = list(map(chr, segment))
        for c in compress(chars, map(_MARK_CATEGORIES.__contains__, categories)):
            # A combining LEFT ANGLE drawn over the character before it opens a tag too.
            if _LESS_NAME.search(unicodedata.name(c, "")):
                less.add(c)
        named_ones = map(_NAMED_CATEGORIES.__contains__, categories)
        for c, category in compress(zip(chars, categories, strict=True), named_ones):
            folded = unicodedata.normalize("NFKD", c)
            key = folded.casefold()
            if key in letters:
                letters[key].add(c)
            if category in _CASED_LETTERS:
                continue  # a Latin, Greek or Cyrillic letter is never a bracket or a blank by name
            name = unicodedata.name(c, "")
            if any(blank in name for blank in _BLANK_NAMES):
                blanks.append(ord(c))
            elif "<" in folded or _LESS_NAME.search(name):
                less.add(c)
            elif folded == "/" or "SOLIDUS" in name:
                slash.add(c)
    hidden = _merged([*hidden, *((cp, cp) for cp in blanks)])
    # What a code point this Python cannot judge looks like is unknown (a later Unicode may
    # assign it a "<", as Unicode 17 did with LEIBNIZIAN LESS-THAN): it opens a tag as well.
    hidden_less = {c for c in less if _inside(ord(c), hidden)}
    hidden_openers = _merged([*unknown, *_runs(ord(c) for c in hidden_less)])
    ascii_gaps = [(cp, cp) for cp in range(0x80) if _inside(cp, hidden)]  # space, tab, controls
    stand_ins = [(ord(_GAP), ord(_GAP)), (ord(_GAP_OPENER), ord(_GAP_OPENER))]
    gap = f"{_char_class(_merged([*ascii_gaps, *stand_ins]))}*"
    frame_names = "|".join(gap.join(_letter(ch, letters[ch], gap) for ch in name) for name in FRAME_NAMES)
    opener = _class_of({*(less - hidden_less), _GAP_OPENER})
    # The name ends where no visible word character follows at once (a Hangul filler counts
    # as a letter to \w, but is a gap in the shadow): "<memoryx" is no tag; "<memory\u3164>"
    # and '<out n="1">' are.
    tag = f"{opener}{gap}(?:{_class_of(slash)}{gap})?(?:{frame_names})(?!\\w)"
    return _Filter(
        hidden=re.compile(_char_class(_minus(_minus(hidden, hidden_openers), ascii_gaps), often=True) + "+"),
        hidden_openers=re.compile(_char_class(hidden_openers, often=True)),
        tag=re.compile(tag),
    )


def _inside(cp: int, runs: list[tuple[int, int]]) -> bool:
    k = bisect_right(runs, (cp, sys.maxunicode + 1)) - 1
    return k >= 0 and runs[k][0] <= cp <= runs[k][1]


def _minus(runs: list[tuple[int, int]], removed: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The code points of sorted ``runs`` that are not in sorted ``removed``."""
    out: list[tuple[int, int]] = []
    k = 0
    for first, last in runs:
        while k < len(removed) and removed[k][1] < first:
            k += 1
        j = k
        while first <= last:
            if j < len(removed) and removed[j][0] <= last:
                if removed[j][0] > first:
                    out.append((first, removed[j][0] - 1))
                first = max(first, removed[j][1] + 1)
                j += 1
            else:
                out.append((first, last))
                break
    return out


def neutralize_frames(text: str) -> str:
    """Make text unable to open or close one of our frames (``<chat>``, ``</memory>``...) or
    to reorder what follows it (direction controls become escapes, memory/text/bidi.py)."""
    f = _filter()
    shadow = f.shadow(text)
    parts: list[str] = []
    done = 0
    found = f.tag.search(shadow)
    while found is not None:
        # The next tag may start inside this one ("<\ue000chat>": the private-use character
        # opens a tag of its own), so the search goes on right after the opener.
        parts += [text[done : found.start()], ESCAPED]
        done = found.start() + 1
        found = f.tag.search(shadow, done)
    if parts:
        text = "".join(parts) + text[done:]
    return bidi.neutralize_bidi(text)


def prepare() -> None:
    """Build the filter and the name rules now: ~1.0 s of CPU once per process (four scans of
    every code point: categories, decompositions, names; the filter alone before the
    confusables rules took 0.15 s). The engine calls this when it is made, so that the first
    message does not pay for it inside the bot's event loop, stalling ingest and replies;
    nothing is built at import."""
    _filter()
    names.prepare()
