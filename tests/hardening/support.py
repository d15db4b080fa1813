"""Helpers shared by the hardening tests: log capture through the production logging setup,
a text dump of every table, and the row checks every outage and erasure test ends with."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import structlog
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.log_setup import configure_logging
from memory.storage.models import MemoryRow, TreeNode
from memory.tree.row import is_tiling

Sessions = async_sessionmaker[AsyncSession]


@dataclass
class CapturedLogs:
    stream: io.StringIO

    def text(self) -> str:
        return self.stream.getvalue()

    def events(self) -> list[dict[str, Any]]:
        found = []
        for line in self.text().splitlines():
            with contextlib.suppress(ValueError):
                found.append(json.loads(line))
        return found

    def named(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e.get("event") == event]


@contextlib.contextmanager
def production_logs(level: str = "DEBUG") -> Iterator[CapturedLogs]:
    """Run bot.log_setup.configure_logging (JSON lines) into a buffer instead of stderr, and put
    logging back as it was afterwards."""
    stream = io.StringIO()
    saved_structlog = structlog.get_config()
    root = logging.getLogger()
    saved_handlers, saved_root_level = root.handlers[:], root.level
    loggers = [obj for obj in logging.root.manager.loggerDict.values() if isinstance(obj, logging.Logger)]
    saved_levels = {lg.name: lg.level for lg in loggers}
    with mock.patch.object(sys, "stderr", stream):  # both sinks bind sys.stderr when configured
        configure_logging("json", level)
    try:
        yield CapturedLogs(stream)
    finally:
        structlog.configure(**saved_structlog)
        root.handlers[:] = saved_handlers
        root.setLevel(saved_root_level)
        for name, saved in saved_levels.items():
            logging.getLogger(name).setLevel(saved)


def leaked(haystack: str, needles: Iterable[str]) -> list[str]:
    """The needles found in ``haystack``, also as JSON escapes them (non-ASCII words)."""
    found = []
    for needle in needles:
        escaped = json.dumps(needle)[1:-1]
        if needle in haystack or escaped in haystack or needle.lower() in haystack.lower():
            found.append(needle)
    return found


async def table_dump(sessions: Sessions) -> str:
    """Every row of every table of ours as text (what a canary search must not find)."""
    out = []
    async with sessions() as s:
        tables = (await s.scalars(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))).all()
        for table in tables:
            out.extend((await s.scalars(text(f'SELECT t::text FROM "{table}" t'))).all())
    return "\n".join(out)


async def row_state(sessions: Sessions, chat_id: int) -> tuple[bool, list[tuple[int, int]]]:
    """Whether the chat's memory row tiles [0, boundary), and its shown parts not built."""
    async with sessions() as s:
        state = await s.get(MemoryRow, chat_id)
        assert state is not None, f"chat {chat_id} has no memory row"
        parts = [(int(a), int(b)) for a, b in state.shown]
        rows = await s.execute(select(TreeNode.level, TreeNode.idx).where(TreeNode.chat_id == chat_id))
        built = {(int(level), int(idx)) for level, idx in rows}
        return is_tiling(parts, int(state.boundary)), [p for p in parts if p not in built]


async def assert_row_consistent(sessions: Sessions, chat_id: int) -> None:
    tiles, unbuilt = await row_state(sessions, chat_id)
    assert tiles, f"the row of chat {chat_id} does not tile"
    assert not unbuilt, f"chat {chat_id} shows parts that are not built: {unbuilt}"


async def work_left(sessions: Sessions) -> list[int]:
    """Chats whose row still waits for the compactor (staged lines, repair, or people cards)."""
    async with sessions() as s:
        rows = await s.scalars(
            select(MemoryRow.chat_id).where(
                MemoryRow.staged.is_not(None) | MemoryRow.needs_repair | MemoryRow.cards_due
            )
        )
        return list(rows.all())


async def until(check: Callable[[], bool], within: float = 10.0) -> None:
    """Wait (polling every 10 ms) until ``check()`` is true."""
    async with asyncio.timeout(within):
        while True:
            if check():
                return
            await asyncio.sleep(0.01)
