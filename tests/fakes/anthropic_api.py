"""A local fake of the Anthropic Messages API, for the real ``anthropic`` SDK over HTTP.

In-process::

    async with FakeAnthropic(clock=ManualClock()) as fake:
        client = anthropic.AsyncAnthropic(api_key="test", base_url=fake.base_url, max_retries=0)
        fake.script.push_text("hi")

As a process: ``python -m tests.fakes.anthropic_api --port 8765`` (prints its base URL), scripted
and inspected over ``/_fake/*`` (see ``_control_routes``).

Order of handling of ``POST /v1/messages``: auth (``x-api-key`` or ``Authorization: Bearer``),
JSON, shape validation (400 as the API), then an injected fault, then the first matching
scripted item, else the compactor (compaction calls), the join-in judge (a join-in check: "yes"
when its newest chat line holds a "?") or the replier; the prompt cache is updated
only for a request that gets a message. ``count_tokens`` is never faulted and never cached.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from aiohttp import web

from memory.fakes.prompt_cache import Clock, OffsetClock, PromptCache, blocks_of_request, count_request_tokens
from tests.fakes.anthropic_behaviours import (
    Fault,
    FaultInjector,
    Replier,
    ScriptedReply,
    ScriptQueue,
    ToolCall,
    is_join_in_check,
    is_keep_warm_ping,
    join_in_judgement,
    text_block,
)
from tests.fakes.anthropic_compactor import Compactor, is_cards_request, is_compaction_request
from tests.fakes.anthropic_messages import build_message, output_tokens, write_sse
from tests.fakes.anthropic_models import BadListQuery, ModelCatalogue, ModelNotFound
from tests.fakes.anthropic_validation import InvalidRequest, validate_request
from tests.fakes.serving import LocalServer, listening_arguments, serve_until_stopped

MAX_REQUEST_BYTES = 32 * 1024 * 1024
_MALFORMED_BODY = b'{"id": "msg_truncated", "type": "mess'


@dataclass(slots=True)
class LogEntry:
    """One request as received: body (parsed JSON or None), headers (keys redacted), outcome."""

    path: str
    request_id: str
    headers: dict[str, str]
    at: float
    body: Any = None
    # "reply" | "compact" | "join_in" | "cards" (the people cards) | "keep_warm" for /v1/messages
    kind: str | None = None
    fault: str | None = None
    status: int | None = None  # None: no response was sent (e.g. the client gave up on a hang)
    usage: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _safe_headers(headers: Mapping[str, str]) -> dict[str, str]:
    redacted = {"authorization": "Bearer <redacted>", "x-api-key": "<redacted>"}
    return {key.lower(): redacted.get(key.lower(), value) for key, value in headers.items()}


def _error_response(status: int, error_type: str, message: str, request_id: str) -> web.Response:
    body = {"type": "error", "error": {"type": error_type, "message": message}, "request_id": request_id}
    return web.json_response(body, status=status, headers={"request-id": request_id})


class FakeAnthropic(LocalServer):
    """The fake server. ``script``, ``faults``, ``replier``, ``compactor``, ``cache`` and ``log``
    are the knobs and the record; ``reset()`` clears them; ``advance(s)`` moves the clock."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock | None = None,
        overshoot_rate: float = 0.0,
        min_cacheable_tokens: Mapping[str, int] | None = None,
        api_keys: set[str] | None = None,
    ) -> None:
        super().__init__(host, port)
        self.clock: Clock = clock or OffsetClock()
        self.cache = PromptCache(self.clock, min_cacheable_tokens)
        self.script = ScriptQueue()
        self.faults = FaultInjector()
        self.compactor = Compactor(overshoot_rate)
        self.replier = Replier()
        self.api_keys = api_keys
        self.stream_chunk_chars: int | None = None  # characters per streamed text delta
        self.log: list[LogEntry] = []
        self.models = ModelCatalogue()
        self._ids = itertools.count(1)
        self._stopping = asyncio.Event()

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_fake{next(self._ids):06d}"

    def reset(self) -> None:
        self.script.clear()
        self.faults.clear()
        self.cache.clear()
        self.log.clear()
        self.replier.tool_plan = []

    def advance(self, seconds: float) -> float:
        advance = getattr(self.clock, "advance", None)
        if advance is None:
            raise TypeError("this clock cannot be advanced")
        advance(seconds)
        return self.clock()

    def requests(self, kind: str | None = None) -> list[LogEntry]:
        """Logged ``/v1/messages`` requests, optionally only "reply", "compact" or "cards" ones."""
        return [e for e in self.log if e.path == "/v1/messages" and (kind is None or e.kind == kind)]

    def app(self) -> web.Application:
        # The Messages API takes request bodies up to 32 MB (larger: 413 request_too_large);
        # aiohttp's default of 1 MB would refuse one photo.
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_post("/v1/messages", self._handle_messages)
        app.router.add_post("/v1/messages/count_tokens", self._handle_count_tokens)
        app.router.add_get("/v1/models", self._handle_list_models)
        app.router.add_get("/v1/models/{model_id}", self._handle_get_model)
        self._control_routes(app)
        app.router.add_route("*", "/{tail:.*}", self._handle_not_found)
        return app

    async def start(self) -> None:
        self._stopping.clear()
        # handler_cancellation: a client that gives up on a hang cancels the handler.
        await self._listen(self.app(), handler_cancellation=True, access_log=None, shutdown_timeout=1.0)

    async def stop(self) -> None:
        self._stopping.set()
        await self._close()

    # --- the API -------------------------------------------------------------------------

    def _begin(self, request: web.Request) -> LogEntry:
        entry = LogEntry(request.path, self._new_id("req"), _safe_headers(request.headers), self.clock())
        self.log.append(entry)
        return entry

    def _check_auth(self, request: web.Request) -> None:
        key = request.headers.get("x-api-key", "")
        authorization = request.headers.get("authorization", "")
        if not key and authorization.lower().startswith("bearer "):
            key = authorization[len("bearer ") :].strip()
        if not key or (self.api_keys is not None and key not in self.api_keys):
            raise InvalidRequest("invalid x-api-key", 401, "authentication_error")

    async def _read_body(self, request: web.Request, entry: LogEntry) -> Any:
        self._check_auth(request)
        try:
            entry.body = json.loads(await request.read())
        except ValueError as exc:
            raise InvalidRequest(f"There was an issue with the format of your request: {exc}") from exc
        return entry.body

    def _known_model(self, body: dict[str, Any]) -> dict[str, Any]:
        """The real API answers a model id it does not serve with 404 not_found_error
        ("model: <id>"), for messages and count_tokens alike; an alias is served."""
        try:
            self.models.find(body["model"])
        except ModelNotFound as exc:
            raise InvalidRequest(str(exc), 404, "not_found_error") from None
        return body

    async def _handle_count_tokens(self, request: web.Request) -> web.StreamResponse:
        entry = self._begin(request)
        try:
            body = self._known_model(
                validate_request(await self._read_body(request, entry), count_tokens=True)
            )
        except InvalidRequest as exc:
            entry.status = exc.status
            return _error_response(exc.status, exc.error_type, exc.message, entry.request_id)
        entry.status = 200
        return web.json_response(
            {"input_tokens": count_request_tokens(body)}, headers={"request-id": entry.request_id}
        )

    async def _handle_get_model(self, request: web.Request) -> web.Response:
        def model() -> Any:
            return self.models.find(request.match_info["model_id"]).info()

        return self._models_answer(request, model, ModelNotFound, 404, "not_found_error")

    async def _handle_list_models(self, request: web.Request) -> web.Response:
        def page() -> Any:
            return self.models.page(dict(request.query), request.query.getall("lifecycle[]", []))

        return self._models_answer(request, page, BadListQuery, 400, "invalid_request_error")

    def _models_answer(
        self,
        request: web.Request,
        answer: Callable[[], Any],
        refused: type[Exception],
        status: int,
        kind: str,
    ) -> web.Response:
        """The Models API's answer: 401 without a good key, ``status`` when ``answer`` raises ``refused``."""
        entry = self._begin(request)
        try:
            self._check_auth(request)
            body = answer()
        except InvalidRequest as exc:
            entry.status = exc.status
            return _error_response(exc.status, exc.error_type, exc.message, entry.request_id)
        except refused as exc:
            entry.status = status
            return _error_response(status, kind, str(exc), entry.request_id)
        entry.status = 200
        return web.json_response(body, headers={"request-id": entry.request_id})

    async def _handle_messages(self, request: web.Request) -> web.StreamResponse:
        entry = self._begin(request)
        try:
            body = self._known_model(validate_request(await self._read_body(request, entry)))
        except InvalidRequest as exc:
            entry.status = exc.status
            return _error_response(exc.status, exc.error_type, exc.message, entry.request_id)
        if is_join_in_check(body):
            entry.kind = "join_in"
        elif is_keep_warm_ping(body):
            entry.kind = "keep_warm"  # its answer is the replier's, cut at max_tokens like any
        else:
            entry.kind = (
                "cards" if is_cards_request(body) else "compact" if is_compaction_request(body) else "reply"
            )
        # An injected fault comes first; a hang only delays, then the script has its turn.
        injected = self.faults.pick(entry.kind)
        error_after = None
        if injected is not None and injected.kind == "stream_error" and body.get("stream"):
            entry.fault, error_after, injected = injected.kind, injected.after_deltas, None
        if injected is not None and (failed := await self._fault_response(injected, entry)) is not None:
            return failed
        outcome = self.script.pop_for(entry.kind)
        if isinstance(outcome, Fault):
            if (failed := await self._fault_response(outcome, entry)) is not None:
                return failed
            outcome = None
        if outcome is None:
            if entry.kind in ("compact", "cards"):
                outcome = ScriptedReply([text_block(self.compactor.reply_text(body))])
            elif entry.kind == "join_in":
                outcome = join_in_judgement(body)
            else:
                outcome = self.replier.reply(body)
        message_id = "msg_" + entry.request_id.removeprefix("req_")
        message = build_message(body, outcome, message_id, lambda: self._new_id("toolu"))
        usage = self.cache.process(body["model"], blocks_of_request(body))
        message["usage"] = entry.usage = usage.as_usage(output_tokens(message["content"]))
        if body.get("stream"):
            response = await write_sse(
                request, message, entry.request_id, self.stream_chunk_chars, error_after
            )
        else:
            response = web.json_response(message, headers={"request-id": entry.request_id})
        entry.status = 200
        return response

    async def _fault_response(self, fault: Fault, entry: LogEntry) -> web.Response | None:
        """The response for a fault, or None once a hang is over and the request may proceed."""
        entry.fault = fault.kind
        response = await self._fault_body(fault, entry.request_id)
        entry.status = None if response is None else response.status
        return response

    async def _fault_body(self, fault: Fault, request_id: str) -> web.Response | None:
        if fault.kind == "hang":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=fault.hang_seconds)
            if self._stopping.is_set():
                return _error_response(503, "api_error", "Fake is shutting down.", request_id)
            return None
        if fault.kind == "malformed":
            return web.Response(
                status=200,
                body=_MALFORMED_BODY,
                content_type=fault.content_type,
                headers={"request-id": request_id},
            )
        status, error_type, message = fault.error()
        response = _error_response(status, error_type, message, request_id)
        if fault.kind == "rate_limit" or fault.retry_after is not None:
            seconds = 1.0 if fault.retry_after is None else fault.retry_after
            response.headers["retry-after"] = str(max(0, math.ceil(seconds)))
            response.headers["retry-after-ms"] = str(round(seconds * 1000))
        return response

    async def _handle_not_found(self, request: web.Request) -> web.Response:
        entry = self._begin(request)
        entry.status = 404
        return _error_response(404, "not_found_error", f"Not found: {request.path}", entry.request_id)

    # --- the control surface, for a fake running in another process ----------------------

    def _control_routes(self, app: web.Application) -> None:
        app.router.add_post("/_fake/script", self._control_script)
        app.router.add_post("/_fake/errors", self._control_errors)
        app.router.add_post("/_fake/config", self._control_config)
        app.router.add_get("/_fake/log", self._control_log)
        app.router.add_post("/_fake/reset", self._control_reset)
        app.router.add_post("/_fake/clock", self._control_clock)

    async def _control_script(self, request: web.Request) -> web.Response:
        """{"items": [{"text": ...} | {"tool_use": {...}} | {"content": [...]} | {"error": {...}}]}"""
        data = await request.json()
        for item in data.get("items", [data]):
            self.script.push_json(item)
        return web.json_response({"queued": len(self.script)})

    async def _control_errors(self, request: web.Request) -> web.Response:
        """{"fault": {Fault fields}, "next": N} or {"fault": ..., "fraction": p, "seed": s}; "match"."""
        data = await request.json()
        fault, match = Fault.from_json(data["fault"]), data.get("match", "any")
        if "fraction" in data:
            self.faults.fail_fraction(
                float(data["fraction"]), fault, seed=int(data.get("seed", 0)), match=match
            )
        else:
            self.faults.fail_next(int(data.get("next", 1)), fault, match=match)
        return web.json_response({"ok": True})

    async def _control_config(self, request: web.Request) -> web.Response:
        """{"overshoot_rate": r, "tool_plan": [{"name": ..., "input": {...}}]}"""
        data = await request.json()
        if "overshoot_rate" in data:
            self.compactor.overshoot_rate = float(data["overshoot_rate"])
        if "tool_plan" in data:
            self.replier.tool_plan = [
                ToolCall(c["name"], dict(c.get("input") or {})) for c in data["tool_plan"]
            ]
        return web.json_response({"overshoot_rate": self.compactor.overshoot_rate})

    async def _control_log(self, request: web.Request) -> web.Response:
        return web.json_response({"entries": [entry.to_json() for entry in self.log]})

    async def _control_reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    async def _control_clock(self, request: web.Request) -> web.Response:
        data = await request.json()
        return web.json_response({"now": self.advance(float(data.get("advance", 0)))})


def main(argv: list[str] | None = None) -> None:
    parser = listening_arguments(
        "Local fake of the Anthropic Messages API",
        default_port=8765,
        port_help="0 picks a free port (printed)",
    )
    parser.add_argument("--overshoot-rate", type=float, default=0.0)
    args = parser.parse_args(argv)
    fake = FakeAnthropic(host=args.host, port=args.port, overshoot_rate=args.overshoot_rate)
    asyncio.run(serve_until_stopped(fake, lambda: f"fake anthropic listening on {fake.base_url}"))


if __name__ == "__main__":
    main()
