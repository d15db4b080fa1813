"""Time, injectable: the bot runs on the wall clock, replays and tests on simulated time."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class WallClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class SimulatedClock:
    """Moves only when told to; ``sleep`` advances it instead of waiting."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now if self._now is not None else datetime(2026, 1, 1, tzinfo=UTC)

    def set(self, when: datetime) -> None:
        """Move to ``when``; never backwards, except that the first call sets the start
        (a replayed corpus may begin years before any default)."""
        if self._now is None or when > self._now:
            self._now = when

    def advance(self, seconds: float) -> None:
        self._now = self.now() + timedelta(seconds=seconds)

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)
        await asyncio.sleep(0)
