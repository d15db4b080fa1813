"""The row version a compactor pass reads before each model request (memory/compaction/chat_hold.py):
calls that ask while a read is out share the next read, never the one already out, so an
erasure committed before a call asked is always seen by it."""

from __future__ import annotations

import asyncio
from typing import cast

from sqlalchemy.ext.asyncio import AsyncConnection

from memory.compaction.chat_hold import ChatHold


class SlowReads:
    """A connection whose reads see what was committed when they start and answer once released."""

    def __init__(self) -> None:
        self.committed = 1  # the row version as committed
        self.reads = 0
        self.release = asyncio.Event()

    async def scalar(self, query: object) -> int:
        self.reads += 1
        seen = self.committed
        await self.release.wait()
        return seen


async def test_a_call_asking_during_a_read_gets_a_read_started_after_it_shared_with_the_others() -> None:
    reads = SlowReads()
    hold = ChatHold(1, cast(AsyncConnection, reads), cast(AsyncConnection, object()))
    first = asyncio.create_task(hold.version())
    await asyncio.sleep(0)  # the first read is out
    reads.committed = 2  # an erasure commits while it is
    later = [asyncio.create_task(hold.version()) for _ in range(3)]
    await asyncio.sleep(0)
    reads.release.set()
    assert await first == 1
    assert [await task for task in later] == [2, 2, 2]
    assert reads.reads == 2  # the three that asked together share the second read


async def test_a_call_asking_after_a_read_ended_reads_again() -> None:
    reads = SlowReads()
    reads.release.set()
    hold = ChatHold(1, cast(AsyncConnection, reads), cast(AsyncConnection, object()))
    assert await hold.version() == 1
    reads.committed = 3
    assert await hold.version() == 3
    assert reads.reads == 2
