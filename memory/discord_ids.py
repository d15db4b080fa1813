"""Which numbers count as Discord ids: the one rule `eva forget --user` (bot/cli/args.py), the
export readers (memory/imports/dce.py) and the author map (memory/imports/author_map.py) share, so that
every id an import stores is one an erasure can name.

A Discord id is a snowflake: a 64-bit number, the creation time in milliseconds since 2015 in
its top 42 bits. Discord gives no object the id 0, and the top bit stays clear until 2084
(2^41 ms after 2015), so every real id is 1 to 2^63-1, which is also what PostgreSQL's BIGINT
holds. Written as digits only (the API and DiscordChatExporter send ids as strings).
"""

from __future__ import annotations

DISCORD_ID_MAX = 2**63 - 1
# The longest spelling accepted: 19 digits is 2^63-1; one more leaves room for a leading zero,
# and keeps int() away from a megabyte of digits.
_MAX_DIGITS = 20
RANGE_TEXT = f"a whole number from 1 to {DISCORD_ID_MAX}"


def parse_discord_id(value: str) -> int | None:
    """The id ``value`` spells, or None when it is not one (see the module docstring)."""
    if not value.isascii() or not value.isdigit() or len(value) > _MAX_DIGITS:
        return None
    number = int(value)
    return number if 0 < number <= DISCORD_ID_MAX else None


def is_digits(value: str) -> bool:
    """Only ASCII digits: tells "not a number" apart from "a number no account can have"."""
    return value.isascii() and value.isdigit()
