"""The bot's heartbeat file and `eva health`, the container's health check.

While `eva run` runs, it writes HEALTH_FILE every HEALTH_INTERVAL seconds: whether the Discord
gateway is connected, and when the database last answered a `SELECT 1`. `eva health` reads it
and says in one line what is wrong (exit 1), or nothing (exit 0). A file rather than a port:
nothing listens, and the check costs one file read. The file holds no secret and no text.

Why not a check that only opens a TCP connection to the database: it passed while the bot sat
disconnected from Discord, and while PostgreSQL accepted connections but could not answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import structlog

from memory import MemoryEngine
from memory.file_limits import HEARTBEAT_BYTES, read_limited

log = structlog.get_logger(__name__)

MISSED_BEATS = 4  # a heartbeat older than 4 intervals (60 s by default) means the bot is stuck
PING_SECONDS = 5.0


@dataclass(frozen=True)
class Heartbeat:
    written_at: float  # Unix time
    gateway_connected: bool
    database_answered_at: float | None  # Unix time of the last successful SELECT 1
    interval: float


def verdict(beat: Heartbeat | None, now: float) -> str | None:
    """None when healthy, else one sentence: the pure decision `eva health` makes."""
    if beat is None:
        return "no heartbeat yet: the bot has not started (or HEALTH_FILE differs between run and health)"
    limit = MISSED_BEATS * beat.interval
    if now - beat.written_at > limit:
        return f"the bot wrote no heartbeat for {now - beat.written_at:.0f} s: it is stuck or stopped"
    if not beat.gateway_connected:
        return "not connected to the Discord gateway"
    if beat.database_answered_at is None or now - beat.database_answered_at > limit:
        return "the database does not answer"
    return None


def read(path: Path) -> Heartbeat | None:
    """The heartbeat, or None when there is none to read; FileTooLarge for a file far bigger
    than a heartbeat (HEALTH_FILE pointing at some other file)."""
    try:
        raw = read_limited(
            path, HEARTBEAT_BYTES, "a heartbeat file", "point HEALTH_FILE at a file of its own",
            label=f"HEALTH_FILE {path}",
        )  # fmt: skip
        data: dict[str, Any] = json.loads(raw)
        return Heartbeat(**data)
    except (OSError, ValueError, TypeError):
        return None


def write(path: Path, beat: Heartbeat) -> None:
    """Atomically (rename), so `eva health` never reads half a file."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(asdict(beat)))
    os.replace(temporary, path)


def gateway_connected(bot: Any) -> bool:
    """discord.py keeps `ws` while (re)connecting; it is open only once the session is live."""
    ws = getattr(bot, "ws", None)
    return bool(bot.is_ready() and not bot.is_closed() and ws is not None and ws.open)


async def beat_forever(bot: Any, engine: MemoryEngine, path: Path, interval: float) -> None:
    """Runs beside the bot (cancelled with it)."""
    # A file from before a restart must not vouch for this run.
    await asyncio.to_thread(path.unlink, missing_ok=True)
    answered_at: float | None = None
    while True:
        if await engine.answers(PING_SECONDS):
            answered_at = time.time()
        beat = Heartbeat(time.time(), gateway_connected(bot), answered_at, interval)
        try:
            await asyncio.to_thread(write, path, beat)
        except OSError as exc:
            log.warning("health.write_failed", error=type(exc).__name__)
        await asyncio.sleep(interval)
