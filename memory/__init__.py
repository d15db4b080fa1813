"""Eva's memory: the message log, the summary tree and the row a prompt shows.

The door for `bot/`, `bench/` and the tests: :class:`MemoryEngine` (every unit of work), the
builder :func:`build`, the data classes the engine takes and returns, and :mod:`memory.errors`.
The modules behind it are the engine's own.
"""

from __future__ import annotations

from memory import errors
from memory.clock import Clock, WallClock
from memory.compaction.compactor import Compactor, PassReport
from memory.compaction.summarizer import Summarizer
from memory.config import MemoryConfig
from memory.engine import ChatInfo, MemoryEngine, build
from memory.imports.write import ImportJob, ImportResult
from memory.policy.guild_settings import GuildSettingsStore
from memory.pricing import PriceTable, Usage
from memory.privacy.erase import ErasureReport
from memory.privacy.reconcile import DueWalk, LoggedMessage, ReconcileState
from memory.reading.stats import ChatStats, NodeDetail
from memory.reading.view import PromptView
from memory.storage.database import Database
from memory.storage.log import ChatKey, NewMessage
from memory.text.mentions import MentionNames, Rendered

__all__ = [
    "ChatInfo",
    "ChatKey",
    "ChatStats",
    "Clock",
    "Compactor",
    "Database",
    "DueWalk",
    "ErasureReport",
    "GuildSettingsStore",
    "ImportJob",
    "ImportResult",
    "LoggedMessage",
    "MemoryConfig",
    "MemoryEngine",
    "MentionNames",
    "NewMessage",
    "NodeDetail",
    "PassReport",
    "PriceTable",
    "PromptView",
    "ReconcileState",
    "Rendered",
    "Summarizer",
    "Usage",
    "WallClock",
    "build",
    "errors",
]
