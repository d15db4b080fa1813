"""`eva compact` and the model: a failure that will not pass ends the command with one line.

The compactor retries a failed call after RETRY (10 s), forever: right for the running bot,
whose key or network may come back, but a host at a terminal who typed a wrong key saw 36
warnings and exit 0, and `--until-idle` never ended. So the command asks first, with one free
request (GET /v1/models/COMPACT_MODEL, the SDK's own retries included), and then watches every
call: a 401, 403 or 404, or CONNECTION_FAILURES calls in a row that could not connect, end
the command (exit 1) with the setting to fix. A rate limit, an overload or a server error
still waits and retries, as in the bot: those pass.
"""

from __future__ import annotations

from collections.abc import Sequence

import anthropic
from anthropic import AsyncAnthropic

from bot.cli.errors import network_reason, where
from bot.errors import ServiceRefused, ServiceUnreachable
from memory import CompactTask, StillCurrent, Summarizer, SummaryBatch
from memory.claude import ANTHROPIC_API_URL, ClaudeError

CHECK_SECONDS = 15.0  # the first request's timeout: a models lookup answers in well under 1 s
# Calls in a row that found no server: with the SDK's retries already spent on the first
# request, three more failures (the compactor waits RETRY, 10 s, between passes) are not a
# blip; a call that reaches the API resets the count.
CONNECTION_FAILURES = 3


def refusal(exc: BaseException, model: str, base_url: str | None) -> Exception | None:
    """The error that ends the command for an SDK failure that will not pass, else None."""
    if isinstance(exc, anthropic.AuthenticationError):
        return ServiceRefused("Anthropic rejected ANTHROPIC_API_KEY (create a new key in the console)")
    if isinstance(exc, anthropic.PermissionDeniedError):
        return ServiceRefused(f"ANTHROPIC_API_KEY may not use COMPACT_MODEL {model}")
    if isinstance(exc, anthropic.NotFoundError):
        return ServiceRefused(f"COMPACT_MODEL {model} is not a model the API knows")
    if isinstance(exc, anthropic.APIConnectionError) and not isinstance(exc, anthropic.APITimeoutError):
        return ServiceUnreachable(
            f"cannot reach Anthropic at ANTHROPIC_BASE_URL ({where(base_url or ANTHROPIC_API_URL)}): "
            f"{network_reason(exc)}"
        )
    return None


async def check_model(client: AsyncAnthropic, model: str, base_url: str | None, retries: int) -> None:
    """One free request before any work: the key, the model and the address, at once."""
    try:
        await client.with_options(max_retries=retries, timeout=CHECK_SECONDS).models.retrieve(model)
    except anthropic.APIError as exc:
        refused = refusal(exc, model, base_url)
        if refused is None:
            return  # a 5xx or a timeout may pass: the compactor's own retries take it from here
        raise refused from None


class WatchedSummarizer:
    """The command's summarizer: ``inner``'s calls, with the failures that will not pass
    raised out of the compactor instead of retried (see the module docstring)."""

    def __init__(self, inner: Summarizer, model: str, base_url: str | None) -> None:
        self.inner = inner
        self.model = model
        self.base_url = base_url
        self.unconnected = 0  # calls in a row that could not connect

    async def summarize(
        self,
        context: Sequence[str],
        tasks: Sequence[CompactTask],
        *,
        still_current: StillCurrent | None = None,
    ) -> SummaryBatch:
        try:
            batch = await self.inner.summarize(context, tasks, still_current=still_current)
        except Exception as exc:
            cause = _sdk_cause(exc)
            refused = refusal(cause, self.model, self.base_url) if cause is not None else None
            if isinstance(refused, ServiceUnreachable):
                self.unconnected += 1
                if self.unconnected < CONNECTION_FAILURES:
                    raise
            if refused is not None:
                raise refused from None
            self.unconnected = 0  # the API answered, with a failure that passes
            raise
        self.unconnected = 0
        return batch


def _sdk_cause(exc: BaseException) -> BaseException | None:
    """The SDK's exception under a summarizer failure (SummarizerError <- ClaudeError <- SDK)."""
    inner: BaseException | None = exc
    for _ in range(4):
        if inner is None:
            return None
        if isinstance(inner, anthropic.APIError):
            return inner
        if isinstance(inner, ClaudeError) and inner.__cause__ is None:
            return None
        inner = inner.__cause__
    return None
