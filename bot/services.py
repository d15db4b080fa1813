"""What the composition root builds once and hands to every cog (no globals)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anthropic import AsyncAnthropic

from bot.settings import Settings
from memory import Clock, MemoryEngine, PriceTable

if TYPE_CHECKING:
    from bot.gateway.ingest import Ingest
    from bot.gateway.reconcile import Reconciler
    from bot.scheduler import CompactionScheduler


@dataclass
class Services:
    settings: Settings
    engine: MemoryEngine  # the memory: log, tree, row, zoom, recall, erasure, ledger, stats
    claude: AsyncAnthropic  # replies (the SDK's own retries); compaction uses its own copy
    prices: PriceTable
    clock: Clock
    scheduler: CompactionScheduler | None = None
    # Set while the ingest cog is loaded (bot/gateway/cog.py setup, cleared at teardown).
    ingest: Ingest | None = None
    reconciler: Reconciler | None = None


def services_of(client: Any) -> Services:
    """The bot's services (the composition root sets ``bot.services``)."""
    services = getattr(client, "services", None)
    if services is None:
        raise RuntimeError("this bot was built without services; commands cannot run")
    assert isinstance(services, Services)
    return services
