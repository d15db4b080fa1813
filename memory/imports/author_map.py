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

from memory.discord_ids import RANGE_TEXT, is_digits, parse_discord_id
from memory.file_limits import AUTHOR_MAP_BYTES, read_limited
from memory.imports.fields import ImportFormatError


def read_author_map(path: str | os.PathLike[str]) -> dict[str, int]:
    file = Path(path)
    try:
        raw = read_limited(
            file, AUTHOR_MAP_BYTES, "an author map", "list only the authors of the export being imported"
        )
        document = json.loads(raw.decode("utf-8-sig"))
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
    for name, raw_id in document.items():
        value = str(raw_id) if isinstance(raw_id, int) and not isinstance(raw_id, bool) else raw_id
        number = parse_discord_id(value) if isinstance(value, str) else None
        if number is None:
            if not isinstance(value, str) or not is_digits(value):
                raise ImportFormatError(
                    f"{file.name}: the id of {name[:40]!r} is not a Discord id (expected digits)"
                )
            raise ImportFormatError(
                f"{file.name}: the id of {name[:40]!r} is no Discord account's id ({RANGE_TEXT}), so "
                "`eva forget --user` could never erase them; give their real id or leave them out"
            )
        mapping[name] = number
    return mapping
