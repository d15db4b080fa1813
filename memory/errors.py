"""Errors the engine raises for things a person did or asked: each message is one clear
sentence fit to show as-is (CLI line, ephemeral Discord reply, tool result)."""

from __future__ import annotations


class UserFacingError(Exception):
    """Bad input or a request that cannot be met; nothing was changed."""


class ChatNotFound(UserFacingError):
    pass


class BadRequest(UserFacingError):
    pass


class ChatNotEmpty(UserFacingError):
    """An import into a chat that already holds messages."""


class StorageError(Exception):
    """A database statement failed (the SQLAlchemy error is the ``__cause__``); not a person's
    doing, so not user-facing."""


class DatabaseUnavailable(StorageError):
    """The database is down or restarting: connection refused or dropped, pool exhausted.
    Goes away by itself, so callers retry."""


class DuplicateEntry(StorageError):
    """A unique key clashed: the same row was written by a racing writer."""
