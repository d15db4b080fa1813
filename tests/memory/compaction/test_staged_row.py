"""The staged row's parts a compactor keeps between its passes (memory/compaction/staged_row.py):
used only while the row is the version this process wrote, read again after any other write;
two compactors on one chat, one of them stale; and the nodes a worker saw unbuilt, trusted only
within its hold of the chat's lock."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.compaction.compactor import Compactor
from memory.compaction.node_cache import NodeCache
from memory.compaction.planner import plan_chat
from memory.compaction.staged_row import lock_row
from memory.fakes.summarizer import FakeSummarizer
from memory.storage.models import MemoryRow
from memory.storage.tree_nodes import NodeWrite, insert_nodes
from memory.tree.row import is_tiling
from tests.memory.helpers import SMALL, make_engine, message, new_chat

Sessions = async_sessionmaker[AsyncSession]


class RolledBack(Exception):
    pass


LONG = "word " * 30  # ~150 bytes a message: 20 of them pass TAIL_START (2,000 bytes), not TAIL_FORCE (4,000)


def compactor(sessions: Sessions, clock: object) -> Compactor:
    return Compactor(sessions, SMALL, FakeSummarizer(node_bytes=SMALL.node_bytes), clock)  # type: ignore[arg-type]


async def staged_in_db(sessions: Sessions, chat: int) -> tuple[list[tuple[int, int]] | None, int]:
    async with sessions() as s:
        row = await s.get(MemoryRow, chat)
        assert row is not None
        staged = None if row.staged is None else [(a, b) for a, b in row.staged]
        return staged, int(row.staged_boundary or 0)


async def test_kept_parts_are_used_until_another_transaction_writes_the_row(sessions: Sessions) -> None:
    engine, _, clock = make_engine(sessions)
    chat = await new_chat(engine)
    for k in range(20):
        await engine.append(chat, message(k, LONG + str(k)))
    worker = compactor(sessions, clock)
    await worker.run(chat)  # arms the staged row and builds it; not quiet, so no swap
    cache: NodeCache = worker._caches[chat]
    assert cache.staged is not None and cache.staged[1] is not None
    kept = cache.staged[1]
    staged, _ = await staged_in_db(sessions, chat)
    assert staged == kept

    async with sessions() as s, s.begin():
        _, parts = await lock_row(s, cache)
    assert parts is kept  # not read again: the row is the version this worker wrote

    # Any other writer, even of a column the planner does not read, makes a new row version.
    async with sessions() as s, s.begin():
        await s.execute(text("UPDATE memory_rows SET updated_at = now() WHERE chat_id = :c"), {"c": chat})
    async with sessions() as s, s.begin():
        _, parts = await lock_row(s, cache)
    assert parts is not kept and parts == kept  # read from the row again

    # A plan that rolled back leaves no version of its own on the row.
    with pytest.raises(RolledBack):
        async with sessions() as s, s.begin():
            await lock_row(s, cache)
            await s.execute(
                text("UPDATE memory_rows SET staged = '[]'::jsonb WHERE chat_id = :c"), {"c": chat}
            )
            xmin = await s.scalar(text("SELECT xmin::text FROM memory_rows WHERE chat_id = :c"), {"c": chat})
            cache.staged = (str(xmin), [])
            raise RolledBack
    async with sessions() as s, s.begin():
        _, parts = await lock_row(s, cache)
    assert parts == kept


async def test_a_stale_compactor_plans_on_the_staged_row_another_one_armed(sessions: Sessions) -> None:
    """Worker A keeps the staged row it built; worker B swaps it in and arms the next one. A's
    next pass must build and swap B's staged row, not the one it kept (which covers other
    messages: swapping it in would break the row's tiling)."""
    engine, _, clock = make_engine(sessions)
    chat = await new_chat(engine)
    for k in range(20):
        await engine.append(chat, message(k, LONG + str(k)))
    stale, other = compactor(sessions, clock), compactor(sessions, clock)
    await stale.run(chat)
    assert stale._caches[chat].staged is not None
    kept = stale._caches[chat].staged[1]
    assert kept

    await other.run(chat, force_swap=True)  # swaps the staged row in
    for k in range(20, 40):
        await engine.append(chat, message(k, LONG + str(k)))
    await other.run(chat)  # arms and builds the next staged row
    staged, staged_end = await staged_in_db(sessions, chat)
    assert staged is not None and staged != kept

    report = await stale.run(chat, force_swap=True)
    assert report.swaps >= 1
    async with sessions() as s:
        row = await s.get(MemoryRow, chat)
        assert row is not None and row.boundary >= staged_end
        shown = [(a, b) for a, b in row.shown]
    assert is_tiling(shown, row.boundary)
    assert shown[: len(staged)] == staged or is_tiling(shown, row.boundary)


async def test_what_a_worker_saw_unbuilt_is_looked_up_again_in_its_next_hold(sessions: Sessions) -> None:
    """Within one hold of the chat's lock only this worker builds the chat's nodes, so what it
    saw unbuilt stays unbuilt; between holds another worker may have built it."""
    engine, _, clock = make_engine(sessions)
    chat = await new_chat(engine)
    for k in range(12):
        await engine.append(chat, message(k, "word " * 150 + str(k)))  # 750 bytes: the model's
    cache = NodeCache(chat, "UTC")
    async with sessions() as s, s.begin():
        first = await plan_chat(s, SMALL, cache, clock.now(), busy=set(), blocked=set())
    planned = {t.node for t in first.tasks}
    assert planned
    async with sessions() as s, s.begin():  # another worker, in its own hold, builds them
        writes = [
            NodeWrite(t.node, "built elsewhere", t.first_at, t.last_at, by_model=True) for t in first.tasks
        ]
        await insert_nodes(s, chat, writes)
    cache.begin_hold()
    async with sessions() as s, s.begin():
        again = await plan_chat(s, SMALL, cache, clock.now(), busy=set(), blocked=set())
    assert not planned & {t.node for t in again.tasks}


async def test_a_compactor_looks_again_at_what_it_saw_unbuilt_when_it_takes_the_lock_again(
    sessions: Sessions,
) -> None:
    engine, _, clock = make_engine(sessions)
    chat = await new_chat(engine)
    for k in range(12):
        await engine.append(chat, message(k, "word " * 150 + str(k)))
    worker = Compactor(sessions, SMALL, FakeSummarizer(node_bytes=SMALL.node_bytes, fail_rate=1.0), clock)
    report = await worker.run(chat)  # every call fails: the leaves wait for their retry
    assert report.failed_calls and not report.model_nodes
    leaves = [(0, k) for k in range(12)]
    async with sessions() as s, s.begin():  # meanwhile another worker builds them
        await insert_nodes(
            s, chat, [NodeWrite(leaf, "built elsewhere", None, None, by_model=True) for leaf in leaves]
        )
    answering = FakeSummarizer(node_bytes=SMALL.node_bytes)
    worker.summarizer = answering
    clock.advance(SMALL.retry_seconds + 1)
    await worker.run(chat)
    assert not set(leaves) & set(answering.builds)
