"""Eva's memory: the message log, the summary tree and the row a prompt shows.

The door for `bot/`, `bench/` and the tests: :class:`MemoryEngine` (every unit of work), the
builder :func:`build`, the data classes the engine takes and returns, and :mod:`memory.errors`.
The modules behind it are the engine's own.
"""

from __future__ import annotations

from memory import errors
from memory.clock import Clock, WallClock
from memory.compactor import Compactor, PassReport
from memory.config import MemoryConfig
from memory.database import Database
from memory.engine import ChatInfo, MemoryEngine, build
from memory.erase import ErasureReport
from memory.guild_settings import GuildSettingsStore
from memory.import_write import ImportJob, ImportResult
from memory.log import ChatKey, NewMessage
from memory.mentions import MentionNames, Rendered
from memory.pricing import PriceTable, Usage
from memory.reconcile import DueWalk, LoggedMessage, ReconcileState
from memory.stats import ChatStats, NodeDetail
from memory.summarizer import Summarizer
from memory.view import PromptView

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
