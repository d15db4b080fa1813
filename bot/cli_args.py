"""Argument types for the `eva` command line: a value the database cannot store is refused by
argparse with one line naming the option, before any database is opened."""

from __future__ import annotations

import argparse
from typing import NoReturn

CHAT_NAME_CHARS = 200  # chats.name is String(200) (memory/models.py)
SNOWFLAKE_MAX = 2**63 - 1  # Discord ids are stored as BIGINT


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
    """A Discord id: digits only, 1 to 2^63-1."""
    if not value.isascii() or not value.isdigit() or not 0 < int(value) <= SNOWFLAKE_MAX:
        raise argparse.ArgumentTypeError("not a Discord id (a number of up to 19 digits)")
    return int(value)


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
