"""Sentence boundaries of a reply (pure): where a streamed reply may first be shown, and where a
reply cut by ``max_tokens`` ends (docs/design.md, the reply turn).

A sentence ends at ``.``, ``!``, ``?`` or ``…`` (closing quotes, brackets and emphasis marks
may follow) before whitespace, or at a line break. "e.g. this" counts as a boundary too: a
wrong cut there only means one early edit, or a reply a few words shorter.
"""

from __future__ import annotations

import re

ELLIPSIS = "…"
# A streamed reply with no sentence end yet is shown anyway past this length: a long first
# sentence (a list, a code block) should not leave the channel empty for long.
SHOW_WITHOUT_SENTENCE = 280

_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]*_]*(?=\s)|\n")
_WORD_END = re.compile(r"\S(?=\s)")


def has_sentence(text: str) -> bool:
    """True once ``text`` holds a whole sentence (or enough words to show anyway)."""
    return len(text) >= SHOW_WITHOUT_SENTENCE or _SENTENCE_END.search(text.strip() + " ") is not None


def end_at_sentence(text: str) -> str:
    """A reply that ran out of tokens, ended at its last whole sentence with an ellipsis; with
    no whole sentence, at its last whole word; never mid-word."""
    body = text.rstrip()
    if not body:
        return ELLIPSIS
    # A cut right after a full stop still ends a whole sentence: look at the text as if a space
    # followed it.
    ends = [min(m.end(), len(body)) for m in _SENTENCE_END.finditer(body + " ")]
    if ends:
        return body[: ends[-1]].rstrip() + " " + ELLIPSIS
    words = [m.end() for m in _WORD_END.finditer(body)]
    if words:
        return body[: words[-1]] + ELLIPSIS
    return ELLIPSIS  # one unbroken word that was cut: nothing whole to keep
