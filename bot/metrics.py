"""`/metrics` in Prometheus's text format, with the official client library (prometheus_client).

Two sources: counters this process moves as things happen (messages logged by ingest, reply
turns answered, database errors by kind), and figures read from the database at each scrape
(model calls, tokens and cost by kind from the usage ledger, messages stored, the compactor's
backlog and lag), so they hold across restarts and cover `eva worker`'s calls too. Never a
message's text, a name or a token: labels are kinds, not people or chats.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from memory import Totals

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _LedgerCollector(Collector):
    """The database's figures, as last read by :meth:`Metrics.refresh` (collect() is synchronous)."""

    def __init__(self) -> None:
        self.totals: Totals | None = None

    def collect(self) -> Iterator[Metric]:
        totals = self.totals
        if totals is None:
            return
        stored = GaugeMetricFamily("eva_messages_stored", "Messages in the log, erased slots included")
        stored.add_metric([], totals.messages)
        yield stored
        calls = CounterMetricFamily("eva_model_calls", "Model calls in the usage ledger", labels=["kind"])
        tokens = CounterMetricFamily(
            "eva_model_tokens", "Tokens in the usage ledger", labels=["kind", "direction"]
        )
        cost = CounterMetricFamily("eva_model_cost_usd", "Cost at list price, USD", labels=["kind"])
        for kind in ("reply", "compact"):
            usage = totals.usage.get(kind)
            calls.add_metric([kind], usage.calls if usage else 0)
            cost.add_metric([kind], float(usage.cost) if usage else 0.0)
            for direction in ("input", "output", "cache_read", "cache_write"):
                tokens.add_metric([kind, direction], getattr(usage, f"{direction}_tokens") if usage else 0)
        yield from (calls, tokens, cost)
        backlog = GaugeMetricFamily(
            "eva_compactor_backlog_messages", "Raw-tail messages of chats past TAIL_START, waiting for lines"
        )
        backlog.add_metric([], totals.backlog_messages)
        lag = GaugeMetricFamily("eva_compactor_lag_seconds", "Age of the oldest of those messages")
        lag.add_metric([], totals.lag_seconds)
        yield from (backlog, lag)


class Metrics:
    """One per process (the composition root builds it into Services); its own registry, so
    tests and two bots in one process never share counters."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.messages_logged = Counter(
            "eva_messages_logged", "Messages ingest wrote to the log", registry=self.registry
        )
        self.replies = Counter("eva_replies", "Reply turns answered", registry=self.registry)
        self.database_errors = Counter(
            "eva_database_errors", "Database errors ingest met, by kind", ["kind"], registry=self.registry
        )
        self._ledger = _LedgerCollector()
        self.registry.register(self._ledger)

    def refresh(self, totals: Totals) -> None:
        self._ledger.totals = totals

    def render(self) -> bytes:
        return generate_latest(self.registry)
