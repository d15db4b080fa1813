"""What the composition root builds once and hands to every cog (no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from anthropic import AsyncAnthropic
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.settings import Settings
from memory.clock import Clock
from memory.engine import MemoryEngine
from memory.pricing import PriceTable

if TYPE_CHECKING:
    from bot.scheduler import CompactionScheduler


@dataclass
class Services:
    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    engine: MemoryEngine  # the memory: log, tree, row, zoom, recall, erasure
    claude: AsyncAnthropic  # replies (the SDK's own retries); compaction uses its own copy
    prices: PriceTable
    clock: Clock
    scheduler: CompactionScheduler | None = None
    extras: dict[str, Any] = field(default_factory=dict)
