"""Composition root of the bot process (issue 4)."""

from __future__ import annotations

from bot.database_runtime import Database
from bot.settings import Settings


async def run_bot(settings: Settings, db: Database) -> None:
    raise NotImplementedError("the Discord bot lands with issue 4")
