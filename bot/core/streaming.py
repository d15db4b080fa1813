"""One model call through the SDK's streaming API, reporting the text as it grows
(docs/design.md, the reply turn).

``client.messages.stream`` reads the server-sent events (message_start, content_block_start /
_delta / _stop, message_delta with the stop reason and usage, message_stop) and assembles the
same Message a plain ``create`` returns, so the turn loop handles both alike. Every failure
(an HTTP error before the stream, a broken stream, an ``error`` event inside it) becomes a
:class:`~memory.claude.ClaudeError` with a reason and no message text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
from anthropic import AsyncAnthropic
from anthropic.types import Message

from memory.claude import ClaudeError, as_message, failure_reason

TextListener = Callable[[str], Awaitable[None]]  # the text of this call so far
ToolListener = Callable[[str], Awaitable[None]]  # the name of a tool call as it starts


async def stream_message(
    client: AsyncAnthropic,
    *,
    on_text: TextListener | None = None,
    on_tool: ToolListener | None = None,
    **request: Any,
) -> Message:
    """``client.messages.stream(**request)``, its final message, every failure as ClaudeError.

    Listeners run between events and must not raise (bot/reply/live.py swallows Discord's
    errors): anything they raise would be taken for a failed call.
    """
    try:
        async with client.messages.stream(**request) as stream:
            async for event in stream:
                if event.type == "text" and on_text is not None:
                    await on_text(event.snapshot)
                elif (
                    event.type == "content_block_start"
                    and event.content_block.type == "tool_use"
                    and on_tool is not None
                ):
                    await on_tool(event.content_block.name)
            final = await stream.get_final_message()
    except ClaudeError:
        raise
    except anthropic.APIStatusError as exc:
        raise ClaudeError(stream_failure_reason(exc)) from exc
    except Exception as exc:
        raise ClaudeError(failure_reason(exc)) from exc
    return as_message(final)


def stream_failure_reason(exc: anthropic.APIStatusError) -> str:
    """An ``error`` event inside a stream arrives after the 200, so the SDK raises it with
    status 200: name it by the error's type instead ("overloaded_error" -> "overloaded
    (mid-stream)"); the type is one of the API's fixed names, never message text."""
    if exc.status_code != 200:
        return failure_reason(exc)
    body: Any = exc.body if isinstance(exc.body, dict) else {}
    error: Any = body.get("error")
    kind = str(error.get("type", "")) if isinstance(error, dict) else ""
    name = (
        kind.removesuffix("_error").replace("_", " ")
        if kind.endswith("_error") and kind.isascii()
        else "error"
    )
    return f"{name[:40]} (mid-stream)"
