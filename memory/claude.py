"""The one Anthropic client, the usage of a response, and failures named in a few words.

Retries are configured deliberately (docs/design.md section 6):

- replies use the client as built here, with the SDK's own retries (``ANTHROPIC_MAX_RETRIES``,
  default 2: 3 attempts; the SDK honours ``retry-after`` and backs off ``min(0.5 x 2^n, 8 s)``
  otherwise), because a person is waiting and a second or two of retry is the best we can do;
- compaction derives a copy with ``max_retries=0`` (:func:`without_retries`) because the
  compactor's own loop retries a failed node after ``RETRY`` (10 s), forever; SDK retries on top
  would only hold a worker slot for up to ~8 s more per failure.

The timeout is per call: one number for connect, read, write and pool. For a non-streaming call
the API sends nothing until the message is complete, so the read timeout bounds the whole call.
"""

from __future__ import annotations

from typing import Any

import anthropic
from anthropic import AsyncAnthropic
from anthropic.types import Message

from memory.pricing import Usage

ANTHROPIC_API_URL = "https://api.anthropic.com"

# Short names for the API's error statuses (docs/design.md, provider facts); others print as "HTTP n".
_STATUS_NAMES = {
    400: "bad request",
    401: "authentication failed",
    402: "billing error",
    403: "permission denied",
    404: "not found",
    408: "request timeout",
    409: "conflict",
    413: "request too large",
    422: "unprocessable request",
    429: "rate limited",
    500: "server error",
    502: "bad gateway",
    503: "unavailable",
    504: "gateway timeout",
    529: "overloaded",
}


def make_client(api_key: str, base_url: str | None, timeout: float, max_retries: int) -> AsyncAnthropic:
    """The process's one client, built once at start by the composition root.

    ``base_url`` None means Anthropic's own API. We pass it explicitly rather than let the SDK
    read ``ANTHROPIC_BASE_URL`` or a credentials profile itself: settings are read in one place
    (bot/settings.py), so what the bot talks to is what ``eva doctor`` shows.
    """
    return AsyncAnthropic(
        api_key=api_key,
        base_url=base_url or ANTHROPIC_API_URL,
        timeout=timeout,
        max_retries=max_retries,
    )


def without_retries(client: AsyncAnthropic, timeout: float | None = None) -> AsyncAnthropic:
    """A copy for compaction calls: no SDK retries (the compactor retries), same HTTP pool."""
    if timeout is None:
        return client.with_options(max_retries=0)
    return client.with_options(max_retries=0, timeout=timeout)


def usage_from_response(message: Message) -> Usage:
    """The four counters of a response (five with the 5-minute / 1-hour write split).

    When the API gives no ``cache_creation`` breakdown, every cache write is counted as a
    5-minute write: that is the default TTL, and the cheaper rate (1.25x input against 2x), so
    an old response without the split is never overcharged.
    """
    usage = message.usage
    created = usage.cache_creation_input_tokens or 0
    split = usage.cache_creation
    if split is not None:
        write_5m, write_1h = split.ephemeral_5m_input_tokens, split.ephemeral_1h_input_tokens
    else:
        write_5m, write_1h = created, 0
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_write_5m_tokens=write_5m,
        cache_write_1h_tokens=write_1h,
        cache_read_tokens=usage.cache_read_input_tokens or 0,
    )


class ClaudeError(Exception):
    """A model call failed. ``reason`` is a few words ("overloaded (529)", "timeout"), safe to log:
    it never holds message text or the API's error message (which may quote the request)."""

    def __init__(self, reason: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry_after = retry_after

    @property
    def rate_limited(self) -> bool:
        return self.status in RATE_LIMIT_STATUSES


# 429 rate_limit_error and 529 overloaded_error: the key or the API is saturated, so another
# request now only keeps the limit hit (for replies too).
RATE_LIMIT_STATUSES = (429, 529)


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait an API error asks for: ``retry-after-ms``, else ``retry-after`` in seconds (an
    HTTP date is ignored: the API sends seconds); None when it names none."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if 0 <= seconds < 24 * 3600:  # a day or more is not a wait, it is a broken header
            return seconds
    return None


def failure_reason(exc: BaseException) -> str:
    """Classify any exception raised by a call into a short reason without message text."""
    if isinstance(exc, ClaudeError):
        return exc.reason
    if isinstance(exc, anthropic.APITimeoutError):  # before its base class, APIConnectionError
        return "timeout"
    if isinstance(exc, anthropic.APIConnectionError):
        return "connection error"
    if isinstance(exc, anthropic.APIStatusError):
        name = _STATUS_NAMES.get(exc.status_code, "HTTP")
        return f"{name} ({exc.status_code})"
    if isinstance(exc, anthropic.APIResponseValidationError | ValueError):
        # A 200 whose body is not the JSON of a message: the SDK raises JSONDecodeError (a
        # ValueError) for a broken "application/json" body, pydantic a ValidationError (also a
        # ValueError) for a wrong shape.
        return "bad response"
    if isinstance(exc, TimeoutError):
        return "timeout"
    return f"unexpected error ({type(exc).__name__})"


def as_message(result: Any) -> Message:
    """The response as a Message, or ClaudeError("bad response").

    anthropic 2.14 returns the body as a ``str`` from ``messages.create`` when a 200 comes with
    a non-JSON content type (an HTML error page from a proxy, say).
    """
    if not isinstance(result, Message):
        raise ClaudeError("bad response")
    return result


async def create_message(client: AsyncAnthropic, **request: Any) -> Message:
    """``client.messages.create(**request)`` (not streamed), every failure as :class:`ClaudeError`.

    Cancellation (a BaseException) passes through untouched.
    """
    try:
        result = await client.messages.create(**request)
    except Exception as exc:
        status = exc.status_code if isinstance(exc, anthropic.APIStatusError) else None
        raise ClaudeError(failure_reason(exc), status=status, retry_after=retry_after_seconds(exc)) from exc
    return as_message(result)


def message_text(message: Message) -> str:
    """The text of a response's text blocks, joined (tool calls and thinking left out)."""
    return "".join(block.text for block in message.content if block.type == "text")
