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
    doing, so not user-facing. As it stands, the same work fails again: a message that hits it
    can never be stored. ``sqlstate``: PostgreSQL's code for the failure, when the server sent one
    (the message names the error's type and code only, never a statement's values)."""

    def __init__(self, kind: str, sqlstate: str | None = None) -> None:
        super().__init__(kind if sqlstate is None else f"{kind} (SQLSTATE {sqlstate})")
        self.kind, self.sqlstate = kind, sqlstate


class TransientStorageError(StorageError):
    """The database cannot do it now but will: its disk or memory is full, the statement was
    cancelled or timed out, a lock was not granted in time, a deadlock or a serialization
    failure rolled it back. Nothing was written; callers try the same work again later."""


class DatabaseUnavailable(TransientStorageError):
    """The database is down or restarting: connection refused or dropped, pool exhausted.
    Goes away by itself, so callers retry."""


class DuplicateEntry(StorageError):
    """A unique key clashed: the same row was written by a racing writer."""
