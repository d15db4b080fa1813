"""Tool steps in the reply turn model: which turns look something up, and what they read back.

The replay's turn model sends one request per turn. A real turn that zooms or recalls sends one
more per step, each re-reading the prefix and writing its own new end. Stated shares, drawn per
turn from a fixed seed: 20% of turns make one step, 5% two (a quarter of the turns look
something up). The steps run the real tools (bot/core/tools.py ``run_tool``) on the replayed
chat as it is at that turn, so their results have the sizes the bot would send back: the first
step recalls the asking message's longest words (up to 5 of 4 letters or more, the way a model
picks distinctive words), the second zooms into a line of the row picked by the same draw (or
recalls again while the row is empty).
"""

from __future__ import annotations

import hashlib
import re

from bench.meters import ToolStep
from bot.core.tools import ToolContext, run_tool
from memory import ImportedMessage, MemoryEngine

ONE_STEP_SHARE = 0.20
TWO_STEP_SHARE = 0.05
STEP_SEED = "eva-bench-tools-1"
QUERY_WORDS = 5
# The bot's TOOL_RESULT_BYTES default (bot/settings.py), typed in as bench/ reads no bot settings;
# tests/bench/test_meters.py checks they agree.
TOOL_RESULT_BYTES = 8000
_WORD = re.compile(r"\w{4,}")


def _draw(index: int) -> float:
    digest = hashlib.sha256(f"{STEP_SEED}|{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def steps_for(index: int) -> int:
    """How many tool steps the turn answering message ``index`` makes: 0, 1 or 2."""
    draw = _draw(index)
    if draw < TWO_STEP_SHARE:
        return 2
    return 1 if draw < TWO_STEP_SHARE + ONE_STEP_SHARE else 0


def query_words(text: str) -> str:
    """The message's longest distinct words (4+ letters), longest first: a recall query."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    return " ".join(sorted(words, key=len, reverse=True)[:QUERY_WORDS])


async def _never() -> None:
    """No one asks to be forgotten in the benchmark."""


async def take_steps(
    memory: MemoryEngine, chat_id: int, index: int, record: ImportedMessage
) -> list[ToolStep]:
    """The tool steps of the turn answering message ``index``, with the real tools' results."""
    count = steps_for(index)
    if not count:
        return []
    ctx = ToolContext(memory, chat_id, 0, record.author_name, TOOL_RESULT_BYTES, _never)
    query = {"query": query_words(record.content) or record.author_name}
    steps = [ToolStep("recall", query, (await run_tool(ctx, "recall", query)).text)]
    if count == 2:
        addresses = await memory.row_addresses(chat_id)
        if addresses:
            first, n = addresses[int(_draw(-index) * len(addresses))].split("+")
            arguments: dict[str, object] = {"id": int(first), "n": int(n)}
            steps.append(ToolStep("zoom", arguments, (await run_tool(ctx, "zoom", arguments)).text))
        else:  # the same query on the same chat: the same result
            steps.append(steps[0])
    return steps
