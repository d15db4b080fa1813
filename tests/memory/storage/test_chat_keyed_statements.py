"""The hot paths are ready for a database distributed by chat (docs/design.md, running it
distributed): every statement the engine runs while it logs a message, builds a reply's row
and cards, zooms, recalls, compacts or erases in one chat names that chat on each hot table it
reads or writes. On Citus such a statement goes to the one node that holds the chat; one
without the condition would fan out to every node, or (a write) could not run at all.

The statements are recorded as the driver receives them (SQLAlchemy's before_cursor_execute),
so the check reads what PostgreSQL reads, whether the query came from the ORM or from text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from tests.memory.helpers import fill, make_engine, message, new_chat, settle

Sessions = async_sessionmaker[AsyncSession]

# The tables keyed by chat_id first: the ones Citus distributes on chat_id, co-located.
HOT_TABLES = ("messages", "nodes", "memory_rows", "people_cards", "reconcile_cursors")
# Words that may follow a table's name and are not its alias.
KEYWORDS = {"where", "set", "join", "on", "left", "inner", "right", "group", "order", "limit", "returning",
            "values", "for", "using", "as", "select", "union", "and", "or"}  # fmt: skip
REFERENCE = re.compile(
    r"\b(?:FROM|JOIN|UPDATE|INTO)\s+(" + "|".join(HOT_TABLES) + r")\b(?:\s+(?:AS\s+)?(\w+))?",
    re.IGNORECASE,
)


def unkeyed(statement: str) -> list[str]:
    """The hot tables ``statement`` touches without a chat_id condition on them: an insert
    names the chat_id column; a read, update or delete compares ``alias.chat_id`` (or a bare
    ``chat_id`` where the table has no alias) with a value, a list or another table's key."""
    missing = []
    for found in REFERENCE.finditer(statement):
        table, alias = found.group(1), found.group(2)
        if alias is None or alias.lower() in KEYWORDS:
            alias = table
        after = statement[found.end() :].lstrip()
        if statement[found.start() :].upper().startswith("INTO"):
            if not re.match(r"\(\s*chat_id\b", after):
                missing.append(table)
            continue
        prefixes = [re.escape(alias) + r"\."] + ([""] if alias == table else [])
        keyed = any(
            re.search(r"(?<![\w.])" + prefix + r"chat_id\s*(=|IN\b)", statement, re.I) for prefix in prefixes
        )
        if not keyed:
            missing.append(table)
    return missing


KEYED = (
    "SELECT nodes.idx FROM nodes WHERE nodes.chat_id = $1 AND nodes.level = $2",
    "SELECT n.text FROM unnest($1) AS w(idx) JOIN nodes n ON n.chat_id = $3 AND n.idx = w.idx",
    "WITH dup AS (SELECT 1 FROM messages WHERE chat_id = $1 AND snowflake = $2) SELECT 1",
    "INSERT INTO people_cards (chat_id, person_id) VALUES ($1, $2)",
    "UPDATE memory_rows SET staged=$1 WHERE memory_rows.chat_id IN ($2)",
)
UNKEYED = {
    "SELECT m.text FROM messages m WHERE m.idx >= $1": ["messages"],
    "SELECT nodes.idx FROM nodes WHERE nodes.level = $1 AND nodes.idx IN ($2)": ["nodes"],
    "INSERT INTO messages (idx, chat_id) VALUES ($1, $2)": ["messages"],
    # One table keyed does not excuse the other of a join.
    "SELECT 1 FROM memory_rows r JOIN messages m ON m.idx >= r.boundary WHERE r.chat_id = $1": ["messages"],
}


def test_the_check_tells_a_keyed_statement_from_one_that_is_not() -> None:
    """The check itself, on statements of the kinds the engine sends."""
    assert [unkeyed(statement) for statement in KEYED] == [[]] * len(KEYED)
    assert {statement: unkeyed(statement) for statement in UNKEYED} == UNKEYED


@contextmanager
def recorded(bind: AsyncEngine) -> Iterator[list[str]]:
    """Every statement sent to the server inside the block, whitespace folded."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        seen.append(" ".join(statement.split()))

    event.listen(bind.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(bind.sync_engine, "before_cursor_execute", record)


async def test_every_hot_path_statement_names_its_chat(sessions: Sessions, engine: AsyncEngine) -> None:
    memory, summarizer, clock = make_engine(sessions)
    chat = await new_chat(memory)
    other = await new_chat(memory, name="other", discord_id=556)  # a neighbour the filters keep out
    await fill(memory, clock, other, [message(k) for k in range(30)], compact_every=10)
    with recorded(engine) as seen:
        # Ingest: one at a time (the bot's path, with its opt-out check) and in a batch (backfill).
        await fill(memory, clock, chat, [message(k) for k in range(100)], compact_every=4)
        batch = [(message(k), None) for k in range(100, 110)]
        assert await memory.append_from_discord(555, batch, [None] * len(batch)) is not None
        await memory.append_many(chat, [message(k) for k in range(110, 130)])
        await memory.edit(chat, 10_007, "an edited message about padel")
        # Compaction to a quiet night: batches, swaps, people cards.
        await settle(memory, clock, chat)
        # A reply's context and its tools.
        await memory.prompt_view(chat)
        await memory.people_cards(chat)
        addresses = await memory.row_addresses(chat)
        await memory.zoom_address(chat, addresses[0])
        await memory.zoom(chat, 100, 1)
        await memory.recall(chat, "padel plans", author="Max")
        await memory.slot_of_snowflake(chat, 10_003)
        await memory.backfill_start(chat)
        # Erasure in one chat: messages, then the whole chat.
        await memory.erase_messages(chat, [10_005, 10_006])
        await settle(memory, clock, chat)
        await memory.wipe_chat(chat)
    assert summarizer.calls > 0, "the compactor's statements were among those checked"
    assert len(seen) > 100
    touching = [s for s in seen if REFERENCE.search(s)]
    assert len(touching) > 50
    lacking = {s[:300]: unkeyed(s) for s in seen if unkeyed(s)}
    assert lacking == {}, "hot-path statements without a chat_id condition"
