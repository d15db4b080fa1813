"""The benchmarks' logs: warnings and errors only, on stderr, so that stdout carries only the figures.

The bot's own setup (bot/log_setup.py) belongs to the Discord edge, which bench/ does not
import (tests/structure/test_layers.py); this is the part a benchmark needs. As in the bot's
logs, an exception shows as its type only: its message can quote chat text.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

EventDict = MutableMapping[str, Any]


def _exception_type(_logger: Any, _name: str, event_dict: EventDict) -> EventDict:
    """structlog processor: ``exc_info`` becomes the exception's type name, message not logged."""
    info = event_dict.pop("exc_info", None)
    event_dict.pop("exception", None)  # a formatted traceback could hold messages
    exc = sys.exc_info()[1] if info is True else info[1] if isinstance(info, tuple) else info
    if isinstance(exc, BaseException):
        event_dict["exc"] = f"{type(exc).__qualname__} (message not logged)"
    return event_dict


class _FirstLineNoMessages(logging.Formatter):
    """A library's record on one line (asyncio's go on with a task's repr, which quotes the
    exception's message), and of an exception its type only."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"[{record.levelname.lower()}] {record.name}: {record.getMessage().split(chr(10), 1)[0]}"
        if record.exc_info and record.exc_info[0] is not None:
            line += f" ({record.exc_info[0].__qualname__}, message not logged)"
        return line


def configure_logging() -> None:
    """structlog events (the engine's) and library records, WARNING and above, to stderr."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            _exception_type,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_FirstLineNoMessages())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
