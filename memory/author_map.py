"""An author-id map for JSONL imports: JSONL names authors by nick only, so erasing a person
by their Discord id cannot find their messages unless the host says which nick is whom.

The file is one JSON object, nick to Discord user id: ``{"alice": "123456789012345678"}``
(ids as strings or numbers). Errors are one line naming the file and the entry to fix, and
never quote more than the nick the host wrote.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memory.import_fields import ImportFormatError

MAX_ID = 2**63  # PostgreSQL bigint, and every Discord id


def read_author_map(path: str | os.PathLike[str]) -> dict[str, int]:
    file = Path(path)
    try:
        document = json.loads(file.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise ImportFormatError(f"{file.name}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{file.name}: not valid UTF-8 (near byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not JSON"
        raise ImportFormatError(f"{file.name}: not valid JSON ({reason})") from None
    if not isinstance(document, dict):
        raise ImportFormatError(f"{file.name}: expected one JSON object mapping author names to Discord ids")
    mapping: dict[str, int] = {}
    for name, raw in document.items():
        value = str(raw) if isinstance(raw, int) and not isinstance(raw, bool) else raw
        if not isinstance(value, str) or not value.isascii() or not value.isdigit() or int(value) >= MAX_ID:
            raise ImportFormatError(
                f"{file.name}: the id of {name[:40]!r} is not a Discord id (expected digits)"
            )
        mapping[name] = int(value)
    return mapping
