"""The two connections a compactor pass holds on its chat, for the pass's whole length.

One holds the chat's advisory lock (one builder per chat across processes) and, in autocommit,
reads the row version right before each model request: one round trip each. The other carries
the pass's transactions (each plan, each call's write), one at a time.

Through a pooled session each of these was a checkout with its ping (BEGIN, a statement,
ROLLBACK), then BEGIN, the work and COMMIT or ROLLBACK: ~5 round trips of overhead for a
one-statement read, and an import's compaction makes ~2 reads and a write per model call
(100,000 messages of #ubuntu: 5,044 calls, docs/benchmarks.md). A pass that loses a connection
(a database restart) fails as a whole and the next pass opens new ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from memory.storage.models import MemoryRow

# Advisory-lock namespace ("EVAC"), so our locks never collide with another app's.
LOCK_NAMESPACE = 0x45564143


class ChatHold:
    """A pass's connections: version reads on the lock's, transactions on the other."""

    def __init__(self, chat_id: int, reads: AsyncConnection, writes: AsyncConnection) -> None:
        self.chat_id, self._reads, self._writes = chat_id, reads, writes
        # A connection runs one statement at a time; a pass's calls run JOBS at once.
        self._reading, self._writing = asyncio.Lock(), asyncio.Lock()
        self._asked = 0  # version() calls so far
        self._answered = 0  # the calls the last read answers: all those made before it started
        self._version: int | None = None

    async def version(self) -> int | None:
        """The row version as committed now (autocommit: its own transaction). Calls made while
        a read is out wait for the next one, which starts after they were made, so it sees every
        erasure committed before them; they share it (JOBS calls asking at once: two reads)."""
        self._asked += 1
        mine = self._asked
        async with self._reading:
            if self._answered < mine:
                answered = self._asked
                query = select(MemoryRow.version).where(MemoryRow.chat_id == self.chat_id)
                self._version = await self._reads.scalar(query)
                self._answered = answered
            return self._version

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A session in a transaction on the pass's write connection, committed when the block
        ends (rolled back when it raises)."""
        session = AsyncSession(bind=self._writes, expire_on_commit=False)
        async with self._writing, session, session.begin():
            yield session


@asynccontextmanager
async def hold_chat(engine: AsyncEngine, chat_id: int) -> AsyncIterator[ChatHold | None]:
    """The chat's session-level advisory lock and the pass's connections; None when another
    worker holds the chat."""
    async with engine.connect() as reads:
        await reads.execution_options(isolation_level="AUTOCOMMIT")
        params = {"ns": LOCK_NAMESPACE, "chat": chat_id}
        if not await reads.scalar(text("SELECT pg_try_advisory_lock(:ns, :chat)"), params):
            yield None
            return
        try:
            async with engine.connect() as writes:
                yield ChatHold(chat_id, reads, writes)
        finally:
            await reads.execute(text("SELECT pg_advisory_unlock(:ns, :chat)"), params)
