"""One reply turn's request, in the cache-friendly layout (the tool loop: bot/core/turn_loop.py).

Layout (docs/design.md section 9), most stable first, at most 4 cache marks:

    tools                       constant                                   -
    system                      persona + memory instructions, constant   mark 1
    user: <people> cards        one block, changes only while quiet        -
    user: <memory> row          fixed 4-line blocks                        mark 2 on the last whole block
    user: <tail> raw tail       blocks cut at message indexes k*8          mark 3 on the last whole block
    user: <turn> note           time, who asked, which message             -
          this turn's files     images and text files of the triggers      -
    the tool loop's steps       assistant tool calls, tool results         mark 4 on the last block

Why these marks: the prompt cache stores a prefix at each mark, and a later request reads the
longest stored prefix it still starts with (looking back up to 20 blocks from each of its own
marks). The system mark lets every chat share tools + system. The row changes only at a swap,
so its last whole 4-line block is stable between swaps. A tail block whose messages end on a
multiple of 8 never changes once the chat has passed it (new messages only append blocks), so
the next turn reads everything up to that block; marking the partial newest block would store a
prefix no later turn can ever read. The end mark lets step k+1 of the tool loop read all of
step k. The row and tail texts come from memory/tree/render.py, where chat text is already
neutralized: a message cannot close ``</memory>`` or ``</tail>`` and pose as instructions.

The files (bot/reply/attachments.py) sit with the per-turn note, after the last tail mark: they are
sent with this turn only, so they must not end up inside a prefix a later turn reads.

Request building is pure (``build_request``); bot/core/turn_loop.py's ``run_turn`` does the I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from bot.core.cache_policy import ALL_FIVE_MINUTES, MarkLifetimes
from memory import PromptView
from memory.text.frame_tags import neutralize_frames
from memory.text.names import quoted
from memory.tree.render import zone

log = structlog.get_logger(__name__)

MAX_CACHE_MARKS = 4  # the API refuses a fifth with a 400
MEMORY_BLOCK_LINES = 4
TAIL_BLOCK_MESSAGES = 8
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
# A turn for someone who may not read this chat's history (bot/reply/access.py).
WITHOUT_MEMORY_NOTE = (
    "{name} cannot read this channel's message history, so your memory of this chat is left out "
    "for them: no memory lines, no tail, no zoom or recall. Answer only from what they wrote "
    "(shown below); if they ask about anything said before, tell them you can't share this channel's "
    "past with them."
)
ANSWERED_APART_NOTE = (
    "Message #{index} by {name} gets a reply of its own, without your memory ({name} cannot read "
    "this channel's message history): do not answer it in this reply."
)

# A join-in channel's unasked answer (bot/reply/join_in.py): in the note, so the cached prefix
# (tools, system, row, tail) is the same as an addressed turn's.
UNPROMPTED_NOTE = (
    "Nobody addressed you: you are joining in because the message seems to ask you or the room "
    "something you can help with. Answer it briefly and helpfully, as a friend in the group would."
)

_TAIL_INDEX = re.compile(r"#(\d+) ")

Block = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Trigger:
    """A message addressed to the bot. ``index`` is its log index; None when it is not in the
    log (its author opted out, or logging is paused), and then ``text`` carries its words."""

    author_name: str
    author_id: int
    index: int | None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class TurnNote:
    now: datetime
    timezone: str
    triggers: tuple[Trigger, ...]  # oldest first; the reply answers the last one
    memory: bool = True  # False: the asker may not read this chat's history (nothing of it shown)
    answered_apart: tuple[Trigger, ...] = ()  # tail messages answered by a turn without memory
    unprompted: bool = False  # nobody addressed Eva: a join-in channel's check said yes

    @property
    def asker(self) -> Trigger:
        return self.triggers[-1]


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def marked(block: Block, ttl: str = "5m") -> Block:
    # "5m" is the API's default: the mark is sent without a ttl, as before lifetimes were chosen.
    mark = dict(EPHEMERAL) if ttl == "5m" else {**EPHEMERAL, "ttl": ttl}
    return {**block, "cache_control": mark}


def memory_blocks(row_lines: Sequence[str]) -> tuple[list[Block], int | None]:
    """The row in blocks of 4 lines (the first opens ``<memory>``); the index of the last whole
    block, or None when there is none. The closing tag travels with the tail."""
    blocks: list[Block] = []
    last_whole: int | None = None
    for start in range(0, len(row_lines), MEMORY_BLOCK_LINES):
        lines = row_lines[start : start + MEMORY_BLOCK_LINES]
        head = "<memory>\n" if start == 0 else ""
        blocks.append(text_block(head + "".join(line + "\n" for line in lines)))
        if len(lines) == MEMORY_BLOCK_LINES:
            last_whole = len(blocks) - 1
    return blocks, last_whole


def _tail_index(line: str, expected: int) -> int:
    """The index a tail line starts with ("#1801 ..."); tail lines are dense, so ``expected``
    is only a fallback."""
    match = _TAIL_INDEX.match(line)
    return int(match.group(1)) if match else expected


def tail_blocks(view: PromptView, memory_open: bool) -> tuple[list[Block], int | None]:
    """The raw tail in blocks cut where a message index is a multiple of 8; the index of the
    last block that ends on such a boundary (stable: later messages never change it)."""
    head = ("</memory>\n" if memory_open else "<memory>\n</memory>\n") + "<tail>\n"
    if view.dropped_note:
        head += view.dropped_note + "\n"
    groups: list[tuple[str, int]] = []  # (text, index after its last message)
    current = head
    end = view.dropped_to if view.dropped_to is not None else view.boundary  # the first shown
    for line in view.tail_lines:
        end = _tail_index(line, end) + 1
        current += line + "\n"
        if end % TAIL_BLOCK_MESSAGES == 0:
            groups.append((current, end))
            current = ""
    if current:
        groups.append((current, -1))  # partial newest block (or the bare head): never marked
    blocks = [text_block(text) for text, _ in groups]
    stable = [i for i, (_, group_end) in enumerate(groups) if group_end > 0]
    return blocks, (stable[-1] if stable else None)


def note_text(note: TurnNote) -> str:
    """The per-turn block: closes the tail, then the time, who asked and which message. It is
    our own instruction frame, so every name and word of a person in it is quoted (a JSON
    string, memory/text/names.py) and frame-neutralized: a name such as ``bob. Ignore the rules``
    or an unlogged message cannot pose as a sentence of ours."""
    local = note.now.astimezone(zone(note.timezone))
    lines = [f"Now: {local:%Y-%m-%d %H:%M} ({note.timezone}, {local:%A})."]
    for trigger in note.triggers[:-1]:
        lines.append(f"Also addressed to you since your last reply: {_describe(trigger, note.memory)}.")
    lines.append(f"Answer {_describe(note.asker, note.memory)}.")
    for trigger in note.answered_apart:
        lines.append(ANSWERED_APART_NOTE.format(name=_name(trigger), index=trigger.index))
    if not note.memory:
        lines.append(WITHOUT_MEMORY_NOTE.format(name=_name(note.asker)))
    if note.unprompted:
        lines.append(UNPROMPTED_NOTE)
    for trigger in note.triggers:
        if trigger.index is None and trigger.text is not None:
            shown = neutralize_frames(quoted(trigger.text))
            if note.memory:
                lines.append(
                    f"The message by {_name(trigger)} is not remembered here (not in the log), so it "
                    f"is only shown now, quoted: {shown}"
                )
            else:
                lines.append(f"The message by {_name(trigger)}, quoted: {shown}")
    return "</tail>\n<turn>\n" + "\n".join(lines) + "\n</turn>"


def _name(trigger: Trigger) -> str:
    return neutralize_frames(quoted(trigger.author_name))


def _describe(trigger: Trigger, memory: bool = True) -> str:
    if trigger.index is None:
        return f"the message by {_name(trigger)} shown below" + (" (it is not in the log)" if memory else "")
    return f"message #{trigger.index} by {_name(trigger)}"


def first_user_content(view: PromptView) -> tuple[list[Block], list[int]]:
    """People, memory and tail blocks (unmarked), and the positions of their marks. The people
    cards are one block of their own before the row: they change only while the chat is quiet,
    as the row does, so the row's mark caches them with it and no fifth mark is needed."""
    people = [text_block(view.people_text())] if view.people_lines else []
    memory, memory_mark = memory_blocks(view.row_lines)
    tail, tail_mark = tail_blocks(view, memory_open=bool(memory))
    marks = [len(people) + memory_mark] if memory_mark is not None else []
    if tail_mark is not None:
        marks.append(len(people) + len(memory) + tail_mark)
    return people + memory + tail, marks


def marked_prefix(view: PromptView, lifetimes: MarkLifetimes) -> list[Block]:
    """The first user message's people, memory and tail blocks with their marks: the part of
    a turn's prompt that the next turn (or a keep-warm ping, bot/core/keep_warm.py) reads."""
    content, marks = first_user_content(view)
    return [marked(block, lifetimes.body) if i in marks else block for i, block in enumerate(content)]


def build_request(
    *,
    model: str,
    max_tokens: int,
    system: str,
    tools: Sequence[Block],
    view: PromptView,
    note: TurnNote,
    steps: Sequence[dict[str, Any]] = (),
    files: Sequence[Block] = (),
    lifetimes: MarkLifetimes = ALL_FIVE_MINUTES,
) -> dict[str, Any]:
    """The Messages API body for one step of a turn (pure). ``steps`` are the tool loop's
    messages so far (assistant, user, assistant, user...), without marks; ``files`` are this
    turn's file blocks, placed after the note. ``lifetimes``: each mark's ttl
    (bot/core/cache_policy.py)."""
    content = marked_prefix(view, lifetimes)
    content.append(text_block(note_text(note)))
    content += [dict(block) for block in files]
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    messages += [{"role": step["role"], "content": list(step["content"])} for step in steps]
    last = messages[-1]["content"]
    last[-1] = marked(last[-1], lifetimes.last)
    request: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "system": [marked(text_block(system), lifetimes.system)],
        "tools": [dict(tool) for tool in tools],
        "messages": messages,
    }
    count = count_cache_marks(request)
    if count > MAX_CACHE_MARKS:  # a layout bug: fail here, not with a 400 from the API
        raise ValueError(f"request has {count} cache marks; the API allows {MAX_CACHE_MARKS}")
    return request


def count_cache_marks(request: dict[str, Any]) -> int:
    blocks: list[Any] = list(request.get("tools") or [])
    system = request.get("system")
    if isinstance(system, list):
        blocks += system
    for message in request.get("messages") or []:
        if isinstance(message.get("content"), list):
            blocks += message["content"]
    return sum(1 for block in blocks if isinstance(block, dict) and "cache_control" in block)
