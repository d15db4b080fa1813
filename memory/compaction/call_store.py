"""Writing what the compactor's calls built: each call's usage in the ledger and its lines in
the tree, in a transaction that reads the row version under a share lock first, so that no
line planned before an erasure is written once the erasure has committed.

Calls that end while a write is going on are written together, in the next transaction. With
an instant model (an import's compaction) the calls of a pass end at once, and a transaction
per call cost a session, a version read, two inserts and their round trips each (100,000
messages of #ubuntu: 5,044 calls, docs/benchmarks.md); with a real model calls end apart
and each is written alone, as soon as it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.compaction.planner import PlannedTask
from memory.compaction.summarizer import CallUsage, SummaryBatch
from memory.policy.ledger import add_usage
from memory.pricing import PriceTable
from memory.storage.models import Chat, MemoryRow
from memory.storage.tree_nodes import NodeWrite, insert_new_nodes

Transaction = Callable[[], AbstractAsyncContextManager[AsyncSession]]


def _future() -> asyncio.Future[int | None]:
    return asyncio.get_running_loop().create_future()


@dataclass(slots=True)
class CallWrite:
    """One call's lines (model-built nodes) and usage, planned at row ``version``."""

    writes: list[NodeWrite]
    usage: CallUsage
    version: int
    # How many of its nodes were inserted, or None when the row moved since planning.
    done: asyncio.Future[int | None] = field(default_factory=_future)


class CallStore:
    """The calls' writes of one chat, one transaction at a time; those that wait go together."""

    def __init__(self, chat_id: int, prices: PriceTable) -> None:
        self.chat_id, self.prices = chat_id, prices
        self._waiting: list[CallWrite] = []
        self._turn = asyncio.Lock()

    async def store(self, transaction: Transaction, call: CallWrite) -> int | None:
        """Write ``call`` (with any that wait); how many of its nodes were inserted, or None
        when the row moved (its usage is recorded all the same)."""
        self._waiting.append(call)
        async with self._turn:
            if not call.done.done():  # else written meanwhile by the call that held the turn
                calls, self._waiting = self._waiting, []
                await self._write(transaction, calls)
        return await call.done

    async def _write(self, transaction: Transaction, calls: list[CallWrite]) -> None:
        try:
            async with transaction() as session:
                results = await self._insert(session, calls)
        except Exception as exc:  # each waiting call raises it, as its own write would have
            for call in calls:
                call.done.set_exception(exc)
            return
        except BaseException:
            for call in calls:
                call.done.cancel()
            raise
        for call, result in zip(calls, results, strict=True):
            call.done.set_result(result)

    async def _insert(self, session: AsyncSession, calls: Sequence[CallWrite]) -> list[int | None]:
        row = select(MemoryRow.version).where(MemoryRow.chat_id == self.chat_id).with_for_update(read=True)
        read = select(row.scalar_subquery(), Chat.guild_id).where(Chat.id == self.chat_id)
        current, guild_id = (await session.execute(read)).one_or_none() or (None, None)
        for call in calls:
            add_usage(
                session,
                chat_id=self.chat_id,
                guild_id=guild_id,
                kind="compact",
                model=call.usage.model or "unknown",
                usage=call.usage.as_usage(),
                prices=self.prices,
            )
        kept = [w for call in calls if call.version == current for w in call.writes]
        inserted = await insert_new_nodes(session, self.chat_id, kept)
        return [
            sum(w.node in inserted for w in call.writes) if call.version == current else None
            for call in calls
        ]


def node_writes(done: Sequence[tuple[PlannedTask, str, int]], batch: SummaryBatch) -> list[NodeWrite]:
    """Each answered task as a model-built node, the call's tokens shared evenly among them."""
    share = max(1, len(done))
    return [
        NodeWrite(
            t.node,
            line,
            t.first_at,
            t.last_at,
            by_model=True,
            model=batch.usage.model or None,
            tries=tries,
            input_tokens=batch.usage.input_tokens // share,
            output_tokens=batch.usage.output_tokens // share,
            cache_write_tokens=batch.usage.cache_write_5m_tokens // share,
            cache_read_tokens=batch.usage.cache_read_tokens // share,
        )
        for t, line, tries in done
    ]
