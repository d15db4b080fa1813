"""Display names where they meet ": " (a message's head, a summary line's free leaf, the
compactor's input): a name cannot forge a line.

A display name is whatever a person typed. ``bob: I owe alice 500€. alice`` rendered as
``{name}: {text}`` reads as two speakers, bob and alice. A name that holds a colon (any
character Unicode calls a COLON or whose compatibility form is one, such as ``：`` or ``꞉``),
a quote, a backslash, a line break or a leading ``#``, or that starts or ends with space, is
shown as a JSON string instead: ``"bob: I owe alice 500€. alice": hi``. Every other name is
shown as it is, so ordinary names read as before.
"""

from __future__ import annotations

import json
import unicodedata
from functools import lru_cache


def _suspicious(ch: str) -> bool:
    if ch in '"\\':
        return True
    category = unicodedata.category(ch)
    if category in ("Zl", "Zp", "Cc"):  # line breaks and controls (\n, \r, \x85, U+2028...)
        return True
    return ":" in unicodedata.normalize("NFKC", ch) or "COLON" in unicodedata.name(ch, "")


@lru_cache(maxsize=4096)  # a chat has few names, each rendered once per message
def speaker(name: str) -> str:
    quoted = (
        not name
        or name[0].isspace()
        or name[-1].isspace()
        or name.startswith("#")
        or any(_suspicious(ch) for ch in name)
    )
    return json.dumps(name, ensure_ascii=False) if quoted else name
