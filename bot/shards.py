"""Which part of Discord this process serves (docs/design.md, running it distributed).

Discord sends a guild's events to shard ``(guild_id >> 22) % shard_count`` and DMs to shard 0
only. With SHARD_COUNT and SHARD_IDS several `eva run` processes split the shards; each one
judges, backfills and reconciles only what its shards own, so a guild another process serves is
never taken for one that removed the bot, and a DM is backfilled by one process only. Without
them the process holds one connection for everything (as a bot under 2,500 guilds may).

Identifies are spaced as Discord asks: ``max_concurrency`` buckets (``shard_id %
max_concurrency``), one IDENTIFY per bucket per 5 seconds. The buckets are spaced within one
process; processes started together may still meet in a bucket, and Discord then refuses one
IDENTIFY, which discord.py retries.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

IDENTIFY_SPACING = 5.0  # seconds between two IDENTIFYs of one bucket (Discord's rule)


def parse_shard_ids(text: str) -> tuple[int, ...]:
    """ "0-3" or "0,2,5" (or both, "0-1,4") as sorted shard ids; ValueError with the reason."""
    ids: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        first, dash, last = part.partition("-")
        if not first.strip().isdigit() or (dash and not last.strip().isdigit()):
            raise ValueError(f"{part!r} is not a shard id or a range such as 0-3")
        low, high = int(first), int(last) if dash else int(first)
        if high < low:
            raise ValueError(f"the range {part!r} runs backwards")
        ids.update(range(low, high + 1))
    if not ids:
        raise ValueError("no shard id given")
    return tuple(sorted(ids))


def shard_of(guild_id: int, shard_count: int) -> int:
    """The shard Discord sends a guild's events to."""
    return (guild_id >> 22) % shard_count


def served_shards(bot: Any) -> tuple[int, tuple[int, ...]] | None:
    """(shard count, this process's shard ids); None: one connection serves everything."""
    count, ids = getattr(bot, "shard_count", None), getattr(bot, "shard_ids", None)
    if count is None or getattr(bot, "shards", None) is None:  # a plain client: no shards
        return None
    return count, tuple(ids) if ids is not None else tuple(range(count))


def owns_guild(bot: Any, guild_id: int) -> bool:
    """Whether this process's shards receive the guild's events."""
    served = served_shards(bot)
    return served is None or shard_of(guild_id, served[0]) in served[1]


def holds_dms(bot: Any) -> bool:
    """Whether this process receives DMs (Discord sends them to shard 0 only)."""
    served = served_shards(bot)
    return served is None or 0 in served[1]


def describe(count: int | None, ids: Sequence[int] | None) -> str:
    """ "shards 0-1 of 4", "shards 0, 2 of 8", "every shard of 4", or "one connection"."""
    if count is None:
        return "one connection (no shards)"
    if ids is None or list(ids) == list(range(count)):
        return f"every shard of {count}"
    ids = sorted(ids)
    if ids == list(range(ids[0], ids[-1] + 1)) and len(ids) > 1:
        return f"shards {ids[0]}-{ids[-1]} of {count}"
    return f"shard{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} of {count}"


def describe_bot(bot: Any) -> str:
    served = served_shards(bot)
    return describe(None, None) if served is None else describe(*served)


class IdentifyBuckets:
    """Spaces IDENTIFYs by ``max_concurrency`` bucket: a shard waits until its bucket's last
    IDENTIFY is IDENTIFY_SPACING seconds old; shards of other buckets go at once."""

    def __init__(self, spacing: float = IDENTIFY_SPACING) -> None:
        self.spacing = spacing
        self.max_concurrency: int | None = None  # from GET /gateway/bot, at the first IDENTIFY
        self._last: dict[int, float] = {}  # bucket -> monotonic time of its last IDENTIFY
        self._lock = asyncio.Lock()

    async def wait(self, shard_id: int) -> float:
        """Sleep as the shard's bucket asks; the seconds slept. The slot is taken before the
        sleep, so two shards of one bucket waiting together go one spacing apart."""
        async with self._lock:
            bucket, now = shard_id % (self.max_concurrency or 1), time.monotonic()
            last = self._last.get(bucket)
            start = now if last is None else max(now, last + self.spacing)
            self._last[bucket] = start
        await asyncio.sleep(start - now)
        return start - now
