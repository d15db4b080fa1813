"""The reply model's tools: their schemas (constant) and their execution through the engine.

One implementation with the slash commands: zoom and recall are ``MemoryEngine.zoom`` and
``MemoryEngine.recall`` (the commands call the same methods), and forget-me shows the asker the
confirmation button through ``ToolContext.ask_forget`` (the Discord side, bot/commands/forget_button.py,
posts the same :class:`~bot.commands.ui.ConfirmView` the /forget-me command uses). Every result is
capped at TOOL_RESULT_BYTES with a note saying how to see the rest; bad arguments come back as
the engine's one-sentence BadRequest, flagged ``is_error``.

The schemas hold no dates or names: they are the very start of every cached prefix.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from memory import RECALL_MAX_LIMIT, MemoryEngine
from memory.errors import BadRequest, UserFacingError

log = structlog.get_logger(__name__)

TOOLS: list[dict[str, Any]] = [
    {
        "name": "zoom",
        "description": (
            "Open the memory line id+n into the two lines of n/2 messages under it; n = 1 gives "
            "message #id whole, with its author and time (a long message comes in pages: pass "
            "page). Use the id and n of a line you see, e.g. a line headed 128+64 is zoom(128, 64)."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "id": {"type": "integer", "minimum": 0, "description": "first message of the line"},
                "n": {"type": "integer", "minimum": 1, "description": "messages the line covers"},
                "page": {"type": "integer", "minimum": 1, "description": "page of a long message"},
            },
            "required": ["id", "n"],
            "additionalProperties": False,
        },
    },
    {
        "name": "recall",
        "description": (
            "Search every message of this chat. A message is found when it shares words with the "
            "query, best first: the exact phrase, then every word, then some of the words (rarer "
            "words count more). Words match in their other forms (wedding, weddings) with accents "
            "ignored, and a person's name matches what they wrote and where they are mentioned. "
            "Give a few distinctive words (names, places, things), not a whole question; for what "
            "a person said, put the topic in query and the person in author. A fragment of a word "
            "works when no whole word matches. Each hit comes with the messages around it; a "
            "'Partial hit' lists which of your words it has."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "a few distinctive words to look for"},
                "author": {"type": "string", "description": "only messages by this person (name)"},
                "limit": {"type": "integer", "minimum": 1, "maximum": RECALL_MAX_LIMIT},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    {
        "name": "forget_me",
        "description": (
            "Erase everything the person you are answering wrote in this server (in a DM: your "
            "DMs with them). It only ever applies to that person, and only after they press a "
            "confirmation button only they can press; this call shows them the button. Use it only "
            "when they ask to be forgotten themselves. Takes no arguments."
        ),
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
    },
]

TOOL_NAMES = frozenset(tool["name"] for tool in TOOLS)
MEMORY_TOOLS = frozenset({"zoom", "recall"})  # the tools that read the chat's memory
# A turn for someone who may not read the chat's history (bot/reply/access.py) offers only
# forget_me, and refuses the others even if the model calls them anyway.
TOOLS_WITHOUT_MEMORY: list[dict[str, Any]] = [tool for tool in TOOLS if tool["name"] not in MEMORY_TOOLS]
FORGET_ASKED = (
    "Asked for confirmation: {name} now sees a button only they can press. Nothing is erased "
    "unless they press it. Tell them to press Confirm."
)
FORGET_ALREADY_ASKED = "The confirmation button is already shown to {name} this turn."
TOOL_UNAVAILABLE = "The memory cannot be read right now. Answer without it, and say so if it matters."
MEMORY_CLOSED = (
    "{name} cannot read this channel's message history, so the memory is closed for this reply. "
    "Answer without it."
)
FORGET_NO_ARGUMENTS = (
    "forget_me takes no arguments: it only ever erases the person you are answering ({name}), "
    "after they confirm. Nobody else can be forgotten this way; they can ask you themselves or "
    "use /forget-me."
)


@dataclass(frozen=True, slots=True)
class ToolResult:
    text: str
    is_error: bool = False

    def block(self, tool_use_id: str) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": self.text}
        if self.is_error:
            block["is_error"] = True
        return block


@dataclass(slots=True)
class ToolContext:
    """What the tools of one turn may touch: this chat (its memory only when the asker may read
    it, ``reads_memory``), and forget-me for this asker only."""

    engine: MemoryEngine
    chat_id: int
    asker_id: int
    asker_name: str
    result_bytes: int
    # Shows the asker the confirmation button (bot/commands/forget_button.py: post_forget_confirmation).
    ask_forget: Callable[[], Awaitable[None]]
    forget_asked: bool = False
    reads_memory: bool = True  # False: the asker may not read this chat's history


def cap_result(text: str, limit_bytes: int) -> str:
    """``text`` within ``limit_bytes`` of UTF-8, cut at a line end when one is near, with a note."""
    data = text.encode("utf-8")
    if len(data) <= limit_bytes:
        return text
    room = max(0, limit_bytes - 200)  # the note below is < 200 bytes
    head = data[:room].decode("utf-8", errors="ignore")
    line_end = head.rfind("\n")
    if line_end > room // 2:
        head = head[:line_end]
    left = len(data) - len(head.encode("utf-8"))
    return (
        f"{head}\n[cut: {left} more bytes not shown. Zoom into a smaller part, ask for the next "
        "page, or search with more precise words or a lower limit.]"
    )


def _integer(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise BadRequest(f"{name} must be a whole number")
    if isinstance(value, int):
        return value
    # isdecimal, not isdigit: "²" is a digit that int() refuses; past 4,300 digits int() refuses
    # too (Python's limit), and no id, count or page is that long.
    if isinstance(value, str) and value.strip().isdecimal() and len(value.strip()) <= 30:
        return int(value.strip())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise BadRequest(f"{name} must be a whole number")


async def _zoom(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    if "id" not in args or "n" not in args:
        raise BadRequest("zoom needs id and n, as in the line head id+n")
    page = _integer(args.get("page", 1), "page")
    return await ctx.engine.zoom(ctx.chat_id, _integer(args["id"], "id"), _integer(args["n"], "n"), page)


async def _recall(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    query = args.get("query")
    if not isinstance(query, str):
        raise BadRequest("recall needs a query: the words to look for")
    author = args.get("author")
    if author is not None and not isinstance(author, str):
        raise BadRequest("author must be a name")
    limit = _integer(args.get("limit", 5), "limit")
    return await ctx.engine.recall(
        ctx.chat_id, query, author=author or None, limit=limit, max_chars=ctx.result_bytes
    )


async def _forget_me(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    if args:  # an argument can only be an attempt to name someone else
        return ToolResult(FORGET_NO_ARGUMENTS.format(name=ctx.asker_name), is_error=True)
    if ctx.forget_asked:
        return ToolResult(FORGET_ALREADY_ASKED.format(name=ctx.asker_name))
    await ctx.ask_forget()
    ctx.forget_asked = True
    return ToolResult(FORGET_ASKED.format(name=ctx.asker_name))


async def run_tool(ctx: ToolContext, name: str, args: Any) -> ToolResult:
    """Run one tool call; never raises for a bad call (the model gets the sentence instead)."""
    if not isinstance(args, Mapping):
        return ToolResult("tool input must be an object", is_error=True)
    if name in MEMORY_TOOLS and not ctx.reads_memory:
        return ToolResult(MEMORY_CLOSED.format(name=ctx.asker_name), is_error=True)
    try:
        if name == "zoom":
            text = await _zoom(ctx, args)
        elif name == "recall":
            text = await _recall(ctx, args)
        elif name == "forget_me":
            return await _forget_me(ctx, args)
        else:
            return ToolResult(f"there is no tool named {name!r}", is_error=True)
    except UserFacingError as exc:
        return ToolResult(str(exc), is_error=True)
    except Exception as exc:  # the database or Discord failed: the model answers without it
        log.error("tool.failed", chat_id=ctx.chat_id, tool=name, error=type(exc).__name__)
        return ToolResult(TOOL_UNAVAILABLE, is_error=True)
    return ToolResult(cap_result(text, ctx.result_bytes))
