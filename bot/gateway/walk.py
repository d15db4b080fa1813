"""The background walk of reconciliation (bot/gateway/reconcile.py): each chat's whole history,
oldest first, one page of RECONCILE_PAGE (100) messages at a time, spread evenly over
RECONCILE_PERIOD (30 days), so an old deletion is found in the end. Each page is queued in its
channel's ingest queue, ordered with live events; the cursor is stored, so a restart resumes."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import structlog

from bot.gateway.chats import channel_for_chat
from bot.gateway.ingest import Ingest
from bot.gateway.ops import Reconcile

log = structlog.get_logger("bot.gateway.reconcile")

TICK_SECONDS = 60.0  # how often the background walk looks for due pages
# Pages queued per tick at most: 10 a minute is far below Discord's limits (50 requests/s
# globally, and history is limited per channel), even when every chat is due at once.
PAGES_PER_TICK = 10
LEASE = timedelta(minutes=10)  # a claimed page not done by then is claimed again


class Reconciler:
    """Queues the walk's due pages every TICK_SECONDS while the gateway is connected. A tick
    with nothing due is two indexed statements."""

    def __init__(self, ingest: Ingest, *, tick_seconds: float = TICK_SECONDS) -> None:
        self.ingest = ingest
        self.tick_seconds = tick_seconds
        self._task: asyncio.Task[None] | None = None

    async def step(self) -> int:
        """Queue the pages that are due; returns how many."""
        ingest = self.ingest
        if not ingest.is_open:
            return 0  # not connected: the walk waits (due pages stay due)
        services = ingest.services
        now = services.clock.now()
        due = await services.engine.claim_due_walks(now, LEASE, PAGES_PER_TICK)
        queued = 0
        for walk in due:
            chat = await services.engine.chat(walk.chat_id)
            if chat is None or chat.paused or chat.discord_id is None:
                continue
            if chat.kind == "dm" and not ingest.settings.reply_in_dms:
                continue
            channel = channel_for_chat(ingest.bot, chat)
            if channel is None:
                continue  # its guild is unavailable or the thread archived: claimed again after the lease
            ingest.queue_reconcile(channel, chat.guild_id, Reconcile(chat.id, walk.after, walk=True))
            queued += 1
        return queued

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="reconcile-walk")

    async def _run(self) -> None:
        failing = False
        while True:
            await asyncio.sleep(self.tick_seconds)
            try:
                await self.step()
                failing = False
            except Exception as exc:  # the database is down: the next tick tries again
                if not failing:
                    log.warning("reconcile.tick_failed", error=type(exc).__name__)
                failing = True

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
