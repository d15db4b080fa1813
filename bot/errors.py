"""Errors of the bot edge."""

from __future__ import annotations

from memory.errors import UserFacingError


class CliError(UserFacingError):
    """A problem the user can fix; the CLI prints it as one line and exits with code 2."""


class ServiceUnreachable(Exception):
    """A service the command needs (the database, Discord, Anthropic) did not answer; the CLI
    prints it as one line and exits with code 1. The message names the setting that points there."""


class ServiceRefused(Exception):
    """A service the command needs refused it for a reason waiting will not fix (a key it
    rejects, a model it does not know); the CLI prints it as one line and exits with code 1.
    The message names the setting to change."""
