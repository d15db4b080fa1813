"""Eva's memory: the message log, the summary tree and the row a prompt shows.

The door for `bot/` and `bench/`: the names below (``__all__``): :class:`MemoryEngine` (every
unit of work), the builder :func:`build`, the data classes the engine takes and returns, and
what the composition root and the CLI need to open a database; plus the modules of
:data:`PUBLIC_MODULES`, importable whole. Everything else is the engine's own, and
tests/structure/test_door.py fails when `bot/` or `bench/` imports it.
"""

from __future__ import annotations

from memory import errors
from memory.clock import Clock, SimulatedClock, WallClock
from memory.compaction.anthropic_summarizer import AnthropicSummarizer
from memory.compaction.compactor import Compactor, PassReport
from memory.compaction.summarizer import (
    CardBatch,
    CardTask,
    CompactTask,
    StillCurrent,
    Summarizer,
    SummaryBatch,
)
from memory.config import MemoryConfig
from memory.engine import ChatInfo, MemoryEngine, build
from memory.engine_dashboard import (
    CompactorOverview,
    HostOverview,
    PrivacyOverview,
    ServerOverview,
)
from memory.imports.author_map import read_author_map
from memory.imports.readers import (
    ImportedMessage,
    ImportFormatError,
    count_messages,
    open_export,
    read_any,
    read_jsonl,
)
from memory.imports.write import ImportJob, ImportResult
from memory.policy.guild_settings import GuildSettingsStore
from memory.policy.rate_marks import EXPORT as EXPORT_MARK
from memory.policy.rate_marks import JOIN_IN as JOIN_IN_MARK
from memory.policy.settings_audit import AuditEntry, Changer
from memory.pricing import PriceTable, Usage
from memory.privacy.erase import ErasureReport
from memory.privacy.reconcile import PAGE as RECONCILE_PAGE
from memory.privacy.reconcile import DueWalk, LoggedMessage, ReconcileState, text_digest
from memory.reading.dashboard import DaySpend, Totals
from memory.reading.export import PersonExport
from memory.reading.reads import PAGE_INDENT, RECALL_MAX_LIMIT
from memory.reading.stats import ChatStats, NodeDetail
from memory.reading.view import PromptView
from memory.storage import migrate
from memory.storage.dashboard_links import LinkGrant, LinkRefused
from memory.storage.database import (
    Database,
    database_location,
    database_reason,
    make_engine,
    make_sessions,
    select_one,
    url_problem,
)
from memory.storage.embedded import EmbeddedPostgres
from memory.storage.log import ChatKey, NewMessage, storable
from memory.text.mentions import MentionNames, Rendered

# isort: split
# For the benchmarks: what bench/ needs beyond the engine's methods, one reason each.
from memory.reading import row_audit  # the replay checks the row's invariants after every swap
from memory.storage.bulk import (
    BulkDatabase,  # the scale chat's bulk load (COPY of the simulated tree) and its sizes
    create_run_database,  # a database per report run, commits without the WAL flush
    fresh_database,  # a database for one replay: on the given server or a throwaway one
)
from memory.storage.database import drop_database  # the report drops each run's database
from memory.storage.log import (
    from_import,  # the replay logs each corpus message as `eva import` does
    tail_line_bytes,  # the replay and the scale chat count the raw tail as the log does
)

# Importable whole by bot/ and bench/ (a name here covers its submodules): the vocabulary every
# layer shares and the pure rules the edge applies itself. None of them runs SQL.
PUBLIC_MODULES = (
    "memory.errors",  # what the engine raises; a UserFacingError's line is shown as it is
    "memory.config",
    "memory.clock",
    "memory.pricing",
    "memory.claude",  # the one Anthropic client, shared by the compactor and the reply turn
    "memory.discord_ids",  # the one rule of what counts as a Discord id
    "memory.file_limits",  # size limits of the files a person points the bot at
    "memory.text",  # names, mentions, records, frame tags, line helpers
    "memory.tree",  # node math, row, swap, the rendering of a line
    "memory.policy.guild_policy",  # who may talk and what it may spend: pure rules
    "memory.fakes",  # the fake model: `eva compact --fake-model` and the benchmarks
)

__all__ = [
    "EXPORT_MARK",
    "JOIN_IN_MARK",
    "PAGE_INDENT",
    "PUBLIC_MODULES",
    "RECALL_MAX_LIMIT",
    "RECONCILE_PAGE",
    "AnthropicSummarizer",
    "AuditEntry",
    "CardBatch",
    "CardTask",
    "Changer",
    "ChatInfo",
    "ChatKey",
    "ChatStats",
    "Clock",
    "CompactTask",
    "Compactor",
    "CompactorOverview",
    "Database",
    "DaySpend",
    "DueWalk",
    "EmbeddedPostgres",
    "ErasureReport",
    "GuildSettingsStore",
    "HostOverview",
    "ImportFormatError",
    "ImportJob",
    "ImportResult",
    "ImportedMessage",
    "LinkGrant",
    "LinkRefused",
    "LoggedMessage",
    "MemoryConfig",
    "MemoryEngine",
    "MentionNames",
    "NewMessage",
    "NodeDetail",
    "PassReport",
    "PersonExport",
    "PriceTable",
    "PrivacyOverview",
    "PromptView",
    "ReconcileState",
    "Rendered",
    "ServerOverview",
    "SimulatedClock",
    "StillCurrent",
    "Summarizer",
    "SummaryBatch",
    "Totals",
    "Usage",
    "WallClock",
    "build",
    "count_messages",
    "database_location",
    "database_reason",
    "errors",
    "make_engine",
    "make_sessions",
    "migrate",
    "open_export",
    "read_any",
    "read_author_map",
    "read_jsonl",
    "select_one",
    "storable",
    "text_digest",
    "url_problem",
]
# For the benchmarks: the last block of imports above says why, name by name.
__all__ += [
    "BulkDatabase",
    "create_run_database",
    "drop_database",
    "fresh_database",
    "from_import",
    "row_audit",
    "tail_line_bytes",
]
