"""Tracebacks in the logs without what an exception can carry of a conversation.

An exception's message can quote chat text (a driver error echoing a row, a ValueError built
from a message, a library quoting a response body), and its frames' locals hold the messages
themselves. So a logged exception is rendered as its chain of types and frames (file, line,
function) only: enough to find the bug, nothing of what was said. Used for structlog's own
events and for records of libraries (discord.py, asyncio, SQLAlchemy) alike, in JSON and
console; without it, JSON showed library exceptions as `<traceback object at 0x...>`.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import MutableMapping
from types import TracebackType
from typing import Any

EventDict = MutableMapping[str, Any]

CHAIN_LIMIT = 5  # causes/contexts followed; real chains here are 2-3 deep (aiohttp -> OS error)
FRAME_LIMIT = 40  # innermost frames kept per exception; a discord.py handler is ~15 deep


def _exc_info(value: Any) -> BaseException | None:
    if isinstance(value, BaseException):
        return value
    if isinstance(value, tuple) and len(value) == 3 and isinstance(value[1], BaseException):
        return value[1]
    if value is True:
        return sys.exc_info()[1]
    return None


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def exception_chain(exc: BaseException) -> list[dict[str, Any]]:
    """The exception and its causes, root cause first (as Python prints them): for each, its
    type and frames, and no message."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < CHAIN_LIMIT:
        chain.append(current)
        context = None if current.__suppress_context__ else current.__context__
        current = current.__cause__ if current.__cause__ is not None else context
    out = []
    for item in reversed(chain):
        tb: TracebackType | None = item.__traceback__
        frames = traceback.extract_tb(tb)[-FRAME_LIMIT:] if tb is not None else []
        out.append(
            {
                "type": _type_name(item),
                "frames": [{"file": f.filename, "line": f.lineno, "function": f.name} for f in frames],
            }
        )
    return out


def chain_as_text(chain: list[dict[str, Any]]) -> str:
    blocks = []
    for link in chain:
        lines = ["Traceback (most recent call last):"]
        lines += [f'  File "{f["file"]}", line {f["line"]}, in {f["function"]}' for f in link["frames"]]
        lines.append(f"{link['type']} (message not logged)")
        blocks.append("\n".join(lines))
    return "\n\nwhich caused:\n\n".join(blocks)


def chain_in_one_line(chain: list[dict[str, Any]]) -> str:
    """'ConnectionRefusedError -> aiohttp...ClientConnectorError at aiohttp/connector.py:1345'."""
    where = ""
    if chain and chain[-1]["frames"]:
        last = chain[-1]["frames"][-1]
        where = f" at {'/'.join(last['file'].split('/')[-2:])}:{last['line']}"
    return " -> ".join(link["type"] for link in chain) + where


class SafeTracebacks:
    """structlog processor: replaces `exc_info` with `exception`. JSON gets the whole chain (a
    list, still one line); the console, read by people, gets a traceback only at DEBUG and
    otherwise the chain of types and where it surfaced, on the event's own line."""

    def __init__(self, as_text: bool, full_text: bool = True) -> None:
        self.as_text = as_text
        self.full_text = full_text

    def __call__(self, _logger: Any, _name: str, event_dict: EventDict) -> EventDict:
        exc = _exc_info(event_dict.pop("exc_info", None))
        # A caller may have put a formatted traceback here already; it could hold messages.
        event_dict.pop("exception", None)
        if exc is None:
            return event_dict
        chain = exception_chain(exc)
        if not self.as_text:
            event_dict["exception"] = chain
        elif self.full_text:
            event_dict["exception"] = chain_as_text(chain)  # printed under the line
        else:
            event_dict["exc"] = chain_in_one_line(chain)
        return event_dict


def first_line_of_asyncio(_logger: Any, _name: str, event_dict: EventDict) -> EventDict:
    """asyncio's 'Task exception was never retrieved' goes on with the task's repr, which
    includes the exception's message: keep the first line (the traceback follows, made safe)."""
    if event_dict.get("logger") == "asyncio" and isinstance(event_dict.get("event"), str):
        event_dict["event"] = event_dict["event"].split("\n", 1)[0]
    return event_dict
