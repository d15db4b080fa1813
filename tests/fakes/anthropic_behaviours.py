"""What the fake answers: a scripted queue, injected faults, and a deterministic replier.

Each queued item and fault has a ``match``: "any" (default), "reply" (only requests that are not
compaction calls) or "compact" (only compaction calls), so a test can script the bot's replies
while the compactor runs alongside without either consuming the other's script.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bot.core.join_in import CHECK_SYSTEM_HEAD
from bot.core.keep_warm import PING_NOTE

# cards: the people cards' call; keep_warm: a ping, which "any" leaves alone (it comes between
# the turns a test scripts, whenever the bot's keep-warm loop ticks)
Match = Literal["any", "reply", "compact", "join_in", "cards", "keep_warm"]
FaultKind = Literal["rate_limit", "api_error", "overloaded", "hang", "malformed", "status", "stream_error"]

# (status, error type, message) of each fault kind that answers with an API error body.
_FAULT_ERRORS: dict[str, tuple[int, str, str]] = {
    "rate_limit": (429, "rate_limit_error", "This request would exceed the rate limit (fake)."),
    "api_error": (500, "api_error", "Internal server error (fake)."),
    "overloaded": (529, "overloaded_error", "Overloaded (fake)."),
}


@dataclass(slots=True)
class Fault:
    """One failure to inject.

    rate_limit: 429 with ``retry-after`` (whole seconds, rounded up, as the API sends) and
    ``retry-after-ms``; api_error: 500; overloaded: 529; status: any ``status``/``error_type``;
    hang: sleep ``hang_seconds`` before answering normally (a client with a smaller timeout gives
    up first); malformed: a 200 whose body is not JSON, sent as ``content_type``. (anthropic 2.14
    raises json.JSONDecodeError for "application/json", and *returns the body as a str* from
    ``messages.create`` for a non-JSON type such as "text/html".) stream_error: a streamed
    request gets its 200 and ``after_deltas`` deltas, then an ``error`` event (overloaded_error);
    a request that is not streamed gets the 529 the API sends before any byte.
    """

    kind: FaultKind
    retry_after: float | None = None
    hang_seconds: float = 30.0
    status: int = 500
    error_type: str = "api_error"
    message: str = ""
    content_type: str = "application/json"
    after_deltas: int = 2

    def error(self) -> tuple[int, str, str]:
        if self.kind == "stream_error":
            return _FAULT_ERRORS["overloaded"]
        if self.kind in _FAULT_ERRORS:
            status, error_type, message = _FAULT_ERRORS[self.kind]
            return status, error_type, self.message or message
        return self.status, self.error_type, self.message or f"Injected {self.status} (fake)."

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fault:
        return cls(**{key: value for key, value in data.items() if key in cls.__dataclass_fields__})


@dataclass(slots=True)
class ScriptedReply:
    """A reply's content blocks (text / tool_use; a tool_use ``id`` is filled in if missing)."""

    content: list[dict[str, Any]]
    stop_reason: str | None = None


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(name: str, tool_input: Mapping[str, Any], tool_id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": dict(tool_input)}
    if tool_id:
        block["id"] = tool_id
    return block


def _matches(match: Match, kind: str) -> bool:
    return (match == "any" and kind != "keep_warm") or match == kind


@dataclass(slots=True)
class _Queued:
    outcome: ScriptedReply | Fault
    match: Match


class ScriptQueue:
    """Replies and errors consumed first-in first-out by the first request they match."""

    def __init__(self) -> None:
        self._items: list[_Queued] = []

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()

    def push(self, outcome: ScriptedReply | Fault, match: Match = "any") -> None:
        self._items.append(_Queued(outcome, match))

    def push_text(self, text: str, *, match: Match = "any", stop_reason: str | None = None) -> None:
        self.push(ScriptedReply([text_block(text)], stop_reason), match)

    def push_tool_use(
        self,
        name: str,
        tool_input: Mapping[str, Any],
        *,
        tool_id: str | None = None,
        text: str | None = None,
        match: Match = "any",
    ) -> None:
        blocks = [text_block(text)] if text else []
        self.push(ScriptedReply([*blocks, tool_use_block(name, tool_input, tool_id)]), match)

    def push_error(self, fault: Fault, *, match: Match = "any") -> None:
        self.push(fault, match)

    def pop_for(self, kind: str) -> ScriptedReply | Fault | None:
        for index, item in enumerate(self._items):
            if _matches(item.match, kind):
                del self._items[index]
                return item.outcome
        return None

    def push_json(self, item: Mapping[str, Any]) -> None:
        """One item of ``POST /_fake/script``: {"text"} | {"tool_use": {name, input, id?}} |
        {"content": [...]} | {"error": {Fault fields}}, each with optional "match", "stop_reason"."""
        match: Match = item.get("match", "any")
        if "error" in item:
            self.push(Fault.from_json(item["error"]), match)
            return
        blocks: list[dict[str, Any]] = list(item.get("content") or [])
        if "text" in item:
            blocks.append(text_block(str(item["text"])))
        if "tool_use" in item:
            call = item["tool_use"]
            blocks.append(tool_use_block(call["name"], call.get("input") or {}, call.get("id")))
        if not blocks:
            raise ValueError("a script item needs text, tool_use, content or error")
        self.push(ScriptedReply(blocks, item.get("stop_reason")), match)


def _unit(seed: int, counter: int) -> float:
    digest = hashlib.sha256(f"fault:{seed}:{counter}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(slots=True)
class _Fraction:
    rate: float
    fault: Fault
    seed: int
    match: Match
    seen: int = 0


class FaultInjector:
    """Faults for "the next N requests" and for "a fraction p of requests".

    The fraction is deterministic for a seed: the k-th matching request fails when
    hash(seed, k) < p, so a run is reproducible.
    """

    def __init__(self) -> None:
        self._next: list[tuple[Fault, Match]] = []
        self._fractions: list[_Fraction] = []

    def clear(self) -> None:
        self._next.clear()
        self._fractions.clear()

    def fail_next(self, count: int, fault: Fault, *, match: Match = "any") -> None:
        self._next += [(fault, match)] * count

    def fail_fraction(self, rate: float, fault: Fault, *, seed: int = 0, match: Match = "any") -> None:
        self._fractions.append(_Fraction(rate, fault, seed, match))

    def pick(self, kind: str) -> Fault | None:
        for index, (fault, match) in enumerate(self._next):
            if _matches(match, kind):
                del self._next[index]
                return fault
        for fraction in self._fractions:
            if _matches(fraction.match, kind):
                fraction.seen += 1
                if _unit(fraction.seed, fraction.seen) < fraction.rate:
                    return fraction.fault
        return None


@dataclass(slots=True)
class ToolCall:
    name: str
    input: dict[str, Any] = field(default_factory=dict)


def _tool_rounds(messages: list[Mapping[str, Any]]) -> int:
    """How many tool_use -> tool_result rounds end the conversation (this turn's tool calls so far)."""
    rounds = 0
    index = len(messages) - 1
    while index >= 1:
        user, assistant = messages[index], messages[index - 1]
        if not (_has_block(user, "tool_result") and _has_block(assistant, "tool_use")):
            break
        rounds += 1
        index -= 2
    return rounds


def _has_block(message: Mapping[str, Any], kind: str) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(block.get("type") == kind for block in content)


class Replier:
    """Answers a non-compaction request when nothing is scripted.

    ``tool_plan``: tools to call first, one per round: round k of a turn (k tool results so far)
    calls ``tool_plan[k]`` if the request offers that tool; after the plan, a short text. A
    ``tool_choice`` naming a tool forces that tool; ``{"type": "none"}`` forbids tools.
    """

    def __init__(self) -> None:
        self.tool_plan: list[ToolCall] = []

    def reply(self, body: Mapping[str, Any]) -> ScriptedReply:
        messages = list(body.get("messages") or [])
        offered = {tool.get("name") for tool in body.get("tools") or ()}
        choice = body.get("tool_choice") or {}
        planned = {call.name: call for call in self.tool_plan}
        if choice.get("type") == "tool" and choice.get("name") in offered:
            call = planned.get(choice["name"], ToolCall(choice["name"]))
            return ScriptedReply([tool_use_block(call.name, call.input)])
        rounds = _tool_rounds(messages)
        if choice.get("type") != "none" and rounds < len(self.tool_plan):
            call = self.tool_plan[rounds]
            if call.name in offered:
                return ScriptedReply([tool_use_block(call.name, call.input)])
        suffix = f" after {rounds} tool result(s)" if rounds else ""
        return ScriptedReply([text_block(f"Fake reply to message {len(messages)}{suffix}.")])


def is_join_in_check(body: Mapping[str, Any]) -> bool:
    """The join-in check of bot/core/join_in.py, known by the head of its system prompt."""
    system = body.get("system") or ""
    text = system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
    return text.startswith(CHECK_SYSTEM_HEAD)


def is_keep_warm_ping(body: Mapping[str, Any]) -> bool:
    """A keep-warm ping of bot/core/keep_warm.py, known by the note its last block is."""
    content = body["messages"][-1]["content"]
    return not isinstance(content, str) and content[-1].get("text") == PING_NOTE


def join_in_judgement(body: Mapping[str, Any]) -> ScriptedReply:
    """The check's answer when nothing is scripted: "yes" when the newest chat line holds a
    question mark, else "no" (a test scripts either with ``push_text(..., match="join_in")``)."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    chat = text.split("<chat>\n", 1)[-1].split("\n</chat>", 1)[0]
    newest = chat.splitlines()[-1] if chat else ""
    return ScriptedReply([text_block("yes" if "?" in newest else "no")])
