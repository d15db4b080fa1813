"""Argument types for the `eva` command line: a value the database cannot store is refused by
argparse with one line naming the option, before any database is opened.

Importing `memory` (even its small `memory.discord_ids`) runs the package's door, which loads
the whole engine and the model client (about 2 s): the id rule is imported when an id is
parsed, so that `eva --help` does not wait for it."""

from __future__ import annotations

import argparse
from typing import NoReturn

CHAT_NAME_CHARS = 200  # chats.name is String(200) (memory/storage/models.py)


class OneLineParser(argparse.ArgumentParser):
    """argparse prints the usage block before its error; a person needs only the error."""

    def error(self, message: str) -> NoReturn:
        # "argument --guild: --guild takes ..." says the option twice; keep the sentence.
        prefix, _, rest = message.partition(": ")
        if prefix.startswith("argument ") and rest.startswith(prefix.removeprefix("argument ")):
            message = rest
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def text(value: str) -> str:
    """Any text PostgreSQL can store: a byte the terminal could not decode arrives as a lone
    surrogate (Python's surrogateescape), and NUL is refused by PostgreSQL's text type."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("not valid UTF-8 text (check the terminal's encoding)") from None
    if "\x00" in value:
        raise argparse.ArgumentTypeError("contains a NUL character")
    return value


def chat_name(value: str) -> str:
    value = text(value)
    if not value.strip():
        raise argparse.ArgumentTypeError("empty chat name")
    if len(value) > CHAT_NAME_CHARS:
        raise argparse.ArgumentTypeError(f"chat names have at most {CHAT_NAME_CHARS} characters")
    return value


def snowflake(value: str) -> int:
    """A Discord id, by the rule the importers apply too (memory/discord_ids.py): an id an
    import can store is one this accepts."""
    from memory.discord_ids import parse_discord_id  # late: see docs/design.md, imports made late

    number = parse_discord_id(value)
    if number is None:
        raise argparse.ArgumentTypeError("not a Discord id (a number of up to 19 digits)")
    return number


def chat_id(value: str) -> int:
    """A chat's own id (chats.id, a BIGINT counted from 1)."""
    from memory.discord_ids import parse_discord_id  # late: see docs/design.md, imports made late

    number = parse_discord_id(value)  # the same range: digits, 1 to 2^63-1
    if number is None:
        raise argparse.ArgumentTypeError("not a chat id (a whole number from 1)")
    return number


def guild_or_dm(value: str) -> str:
    """A guild id, or 'dm' (also '0') for direct messages; returned as text, checked here."""
    if value.lower() in ("dm", "0"):
        return value
    try:
        snowflake(value)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            "--guild takes a Discord guild id (a number of up to 19 digits), or 'dm' for direct messages"
        ) from None
    return value
