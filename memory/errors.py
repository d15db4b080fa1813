"""Errors the engine raises for things a person did or asked: each message is one clear
sentence fit to show as-is (CLI line, ephemeral Discord reply, tool result)."""

from __future__ import annotations


class UserFacingError(Exception):
    """Bad input or a request that cannot be met; nothing was changed."""


class ChatNotFound(UserFacingError):
    pass


class BadRequest(UserFacingError):
    pass
