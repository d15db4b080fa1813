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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import structlog

from bot.shards import describe_bot
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
    shards: str = ""  # the process's shards (bot/shards.py); "" for one connection
    shards_down: list[int] = field(default_factory=list)  # of those, the ones not connected


def verdict(beat: Heartbeat | None, now: float) -> str | None:
    """None when healthy, else one sentence: the pure decision `eva health` makes."""
    if beat is None:
        return "no heartbeat yet: the bot has not started (or HEALTH_FILE differs between run and health)"
    limit = MISSED_BEATS * beat.interval
    if now - beat.written_at > limit:
        return f"the bot wrote no heartbeat for {now - beat.written_at:.0f} s: it is stuck or stopped"
    if not beat.gateway_connected:
        down = f"; down: {', '.join(map(str, beat.shards_down))}" if beat.shards_down else ""
        return "not connected to the Discord gateway" + (f" ({beat.shards}{down})" if beat.shards else "")
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


def healthy_line(beat: Heartbeat | None) -> str | None:
    """What `eva health` says when all is well: the shards of a process that holds some
    (several processes split them); nothing for one connection."""
    return f"connected: {beat.shards}" if beat is not None and beat.shards else None


def gateway_connected(bot: Any) -> bool:
    """discord.py keeps `ws` while (re)connecting; it is open only once the session is live.
    A sharded bot is connected when every one of its shards is."""
    if getattr(bot, "shards", None) is not None:
        return bool(bot.is_ready() and not bot.is_closed() and not shards_down(bot))
    ws = getattr(bot, "ws", None)
    return bool(bot.is_ready() and not bot.is_closed() and ws is not None and ws.open)


def shards_down(bot: Any) -> list[int]:
    """The shards of a sharded bot whose connection is not open (none for a plain client)."""
    shards = getattr(bot, "shards", None) or {}
    return sorted(shard_id for shard_id, shard in shards.items() if shard.is_closed())


async def beat_forever(bot: Any, engine: MemoryEngine, path: Path, interval: float) -> None:
    """Runs beside the bot (cancelled with it)."""
    # A file from before a restart must not vouch for this run.
    await asyncio.to_thread(path.unlink, missing_ok=True)
    answered_at: float | None = None
    while True:
        if await engine.answers(PING_SECONDS):
            answered_at = time.time()
        sharded = getattr(bot, "shards", None) is not None
        beat = Heartbeat(
            time.time(),
            gateway_connected(bot),
            answered_at,
            interval,
            shards=describe_bot(bot) if sharded else "",
            shards_down=shards_down(bot),
        )
        try:
            await asyncio.to_thread(write, path, beat)
        except OSError as exc:
            log.warning("health.write_failed", error=type(exc).__name__)
        await asyncio.sleep(interval)
