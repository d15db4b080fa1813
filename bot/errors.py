"""Errors of the bot edge."""

from __future__ import annotations

from memory.errors import UserFacingError


class CliError(UserFacingError):
    """A problem the user can fix; the CLI prints it as one line and exits with code 2."""
