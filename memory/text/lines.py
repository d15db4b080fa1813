"""Line handling shared by every text the model reads: a message's own line breaks kept from
posing as lines of the prompt, a line flattened to one physical line, a text cut at a byte
count. Pure functions of their arguments; the compactor prompt, the memory lines and the reply's
attachments all use them.
"""

from __future__ import annotations

import re

# What str.splitlines() (and a model reading the text) takes for a line break.
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
CONTINUATION = "\n    "


def indent_continuations(text: str) -> str:
    """A message's own line breaks as a newline and four spaces: no line of a message starts
    a line of the prompt, so a message cannot pose as another message ("#12 ... bob: ...")
    or as a memory line ("0+64 ...|...") where those are one per line."""
    return _LINE_BREAK.sub(CONTINUATION, text)


def flatten(line: str) -> str:
    """One physical line: newlines shown as `` / `` (docs/design.md section 7)."""
    if not _LINE_BREAK.search(line):
        return line
    return " / ".join(part.strip() for part in _LINE_BREAK.split(line) if part.strip())


def cut_at_bytes(text: str, limit: int) -> str:
    """The first ``limit`` bytes of ``text`` without splitting a UTF-8 character."""
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")
