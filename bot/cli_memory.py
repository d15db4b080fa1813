"""Memory subcommands (import, compact, view, zoom, recall, stats, forget): see issue 8."""

from __future__ import annotations

from typing import Any


def register(subs: Any, handlers: dict[str, Any]) -> None:
    return None
