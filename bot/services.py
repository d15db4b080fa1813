"""What the composition root builds once and hands to every cog (no globals), complete: no
module writes into it afterwards. What a cog provides to the others (the ingest) is the cog's
own, found through the bot (bot/gateway/cog.py, ``ingest_of``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from anthropic import AsyncAnthropic

from bot.metrics import Metrics
from bot.scheduler import CompactionScheduler
from bot.settings import Settings
from memory import Clock, MemoryEngine, PriceTable


@dataclass
class Services:
    settings: Settings
    engine: MemoryEngine  # the memory: log, tree, row, zoom, recall, erasure, ledger, stats
    claude: AsyncAnthropic  # replies (the SDK's own retries); compaction uses its own copy
    prices: PriceTable
    clock: Clock
    scheduler: CompactionScheduler | None = None
    metrics: Metrics = field(default_factory=Metrics)  # /metrics: ingest and replies count here


def services_of(client: Any) -> Services:
    """The bot's services (the composition root sets ``bot.services``)."""
    services = getattr(client, "services", None)
    if services is None:
        raise RuntimeError("this bot was built without services; commands cannot run")
    assert isinstance(services, Services)
    return services
