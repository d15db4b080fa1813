"""The tool loop of one reply turn (its request: bot/core/turn.py): call the model, run the tools
it asks for, call again, until it answers, runs out of steps, or is cut by its length limit
(continued once, then ended at a sentence)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from anthropic import AsyncAnthropic
from anthropic.types import Message

from bot.core.cache_policy import ALL_FIVE_MINUTES, MarkLifetimes
from bot.core.sentences import end_at_sentence
from bot.core.streaming import stream_message
from bot.core.tools import ToolResult
from bot.core.turn import Block, TurnNote, build_request, text_block
from memory import PromptView
from memory.claude import ClaudeError, create_message, message_text, usage_from_response
from memory.pricing import Usage

LAST_STEP_NOTE = "(That was your last tool call for this turn: answer now with what you have.)"
# Shown to the people in the chat when the model used up its tool steps without an answer.
STEP_LIMIT_NOTE = (
    "I dug through my memory but ran out of steps before I found it. Ask me again, a bit more precisely?"
)
# Sent once when a reply runs out of max_tokens (docs/design.md, the reply turn).
CONTINUE_NOTE = (
    "(Your reply was cut off by the length limit. Continue it exactly where it stopped, without "
    "repeating anything, and bring it to an end soon.)"
)

ToolRunner = Callable[[str, Any], Awaitable[ToolResult]]


def assistant_step(message: Message) -> dict[str, Any]:
    """The model's output as the next request must carry it back: text and tool calls."""
    content: list[Block] = []
    for block in message.content:
        if block.type == "text" and block.text:
            content.append(text_block(block.text))
        elif block.type == "tool_use":
            content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
    return {"role": "assistant", "content": content}


class TurnProgress(Protocol):
    """What a streamed turn reports while it runs (bot/reply/live.py shows it)."""

    async def text(self, so_far: str) -> None: ...

    async def tool(self, name: str) -> None: ...


@dataclass(slots=True)
class TurnResult:
    text: str = ""
    usages: list[Usage] = field(default_factory=list)
    tool_calls: list[str] = field(default_factory=list)
    step_limited: bool = False
    continued: bool = False  # ran out of max_tokens once and was continued
    cut: bool = False  # ran out of max_tokens again: ended at a sentence
    failure: str | None = None  # ClaudeError reason, when a call failed

    @property
    def calls(self) -> int:
        return len(self.usages)


async def _call(
    client: AsyncAnthropic, request: dict[str, Any], progress: TurnProgress | None, before: str
) -> Message:
    """One model call, streamed when there is someone to show it to. ``before`` is the reply
    text this call continues (after a max_tokens stop), shown ahead of the new text."""
    if progress is None:
        return await create_message(client, **request)

    async def on_text(so_far: str) -> None:
        await progress.text(before + so_far)

    return await stream_message(client, on_text=on_text, on_tool=progress.tool, **request)


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What one reply turn asks the model, and its limit of calls; each call's body is built
    from it (:func:`bot.core.turn.build_request`) with the tool loop's steps so far."""

    model: str
    max_tokens: int
    system: str
    tools: Sequence[Block]
    view: PromptView
    note: TurnNote
    max_steps: int
    files: Sequence[Block] = ()
    lifetimes: MarkLifetimes = ALL_FIVE_MINUTES

    def body(self, steps: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return build_request(
            model=self.model,
            max_tokens=self.max_tokens,
            system=self.system,
            tools=self.tools,
            view=self.view,
            note=self.note,
            steps=steps,
            files=self.files,
            lifetimes=self.lifetimes,
        )


async def run_turn(
    client: AsyncAnthropic, turn: TurnRequest, run_tool: ToolRunner, progress: TurnProgress | None = None
) -> TurnResult:
    """Call the model, run its tools, repeat, at most ``turn.max_steps`` calls (plus one to
    continue a reply cut by ``max_tokens``). Never raises for a failed call: ``failure`` says
    why, and ``usages`` holds every call that was answered. With ``progress`` the calls are
    streamed."""
    result = TurnResult()
    steps: list[dict[str, Any]] = []
    before = ""  # the reply text a continuation adds to
    step = 0
    while True:
        step += 1
        message = await _answered(client, turn.body(steps), progress, before, result)
        if message is None:
            return result  # the call failed: result.failure says why
        text = message_text(message)
        if message.stop_reason == "max_tokens":
            if _continued(result, steps, text):
                before += text
                continue
            return _cut(result, before + text)
        uses = [block for block in message.content if block.type == "tool_use"]
        result.text = (before + text).strip()
        if not uses:
            return result
        if step >= turn.max_steps:
            return _step_limited(result)
        before = ""
        steps.append(assistant_step(message))
        steps.append(await _tool_results(uses, run_tool, result, last_step_next=step + 1 == turn.max_steps))


async def _answered(
    client: AsyncAnthropic,
    request: dict[str, Any],
    progress: TurnProgress | None,
    before: str,
    result: TurnResult,
) -> Message | None:
    """One call, its usage counted; None (and ``result.failure`` set) when it failed."""
    try:
        message = await _call(client, request, progress, before)
    except ClaudeError as exc:
        result.failure = exc.reason
        return None
    result.usages.append(usage_from_response(message))
    return message


def _continued(result: TurnResult, steps: list[dict[str, Any]], text: str) -> bool:
    """A reply cut by max_tokens is continued once (a tool call cut by the limit has incomplete
    input: only its text is kept); False when it was continued already or said nothing."""
    if result.continued or not text.strip():
        return False
    result.continued = True
    steps.append({"role": "assistant", "content": [text_block(text)]})
    steps.append({"role": "user", "content": [text_block(CONTINUE_NOTE)]})
    return True


def _cut(result: TurnResult, text: str) -> TurnResult:
    """Cut by max_tokens again: the reply ends at its last whole sentence."""
    result.cut = True
    result.text = end_at_sentence(text) if text.strip() else ""
    return result


def _step_limited(result: TurnResult) -> TurnResult:
    """It still wanted to look something up at its last step: its text is at best a preamble."""
    result.step_limited = True
    result.text = f"{result.text}\n\n{STEP_LIMIT_NOTE}" if result.text else STEP_LIMIT_NOTE
    return result


async def _tool_results(
    uses: list[Any], run_tool: ToolRunner, result: TurnResult, *, last_step_next: bool
) -> dict[str, Any]:
    """The tools' answers, as the user message of the next step (with the note that it is the
    last one, when it is)."""
    blocks: list[Block] = []
    for use in uses:
        result.tool_calls.append(use.name)
        outcome = await run_tool(use.name, use.input)
        blocks.append(outcome.block(use.id))
    if last_step_next:
        blocks.append(text_block(LAST_STEP_NOTE))
    return {"role": "user", "content": blocks}
