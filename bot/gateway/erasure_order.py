"""One ordering rule for erasure against everything that writes (docs/design.md section 10):
a message created on Discord before an erasure of its author (for a wipe: of its chat) is
never logged after that erasure commits, in this process or after a restart.

- A fence. From the moment a person's erasure starts, ingest refuses that person's messages
  in its scope (a guild, or their DMs) and does not name them in others' messages: every
  queue and every backfill checks before each write (bot/gateway/ingest.py). Once the erasure has
  committed, the fence refuses only what was created before the erasure's moment, and is kept
  for FENCE_KEEP_SECONDS (a gateway RESUME replays older events within minutes).
- The erasure waits until ingest has handled everything queued for the scope before the
  fence (the backfill of a (re)connection included): the writes in flight when the fence went
  up commit first and are erased with the rest.
- Its moment is stored as the backfill floor of the guild's chats (memory/privacy/erase.py): no
  backfill after a restart fetches the history before it again. The floor is a time, not a
  person: after /forget-me no table holds the person's id.
- A wipe stores its moment on the chat (erased_before): every append checks it under the
  chat's lock, so no message older than the wipe is logged again, from any process.

The moment is Discord's time, from Discord's own clock: the snowflake of the button press
plus the time since we received it, plus MARGIN_MS for the press's own delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import discord

from bot.gateway.fences import Fence, snowflake_after
from bot.gateway.ingest import Ingest
from bot.gateway.ops import Backfill, Barrier
from memory.errors import DatabaseUnavailable, UserFacingError

# A press reaches the bot 0.05-0.3 s after Discord stamped it (gateway latency); a second
# covers a slow gateway and a busy event loop. The cost: a message of the erased person (of
# anyone, for a wipe) created within a second after the erasure is not logged.
MARGIN_MS = 1_000
# Discord's interaction token lasts 15 minutes and the press is acknowledged at once
# (bot/commands/ui.py): an erasure may wait up to 10 minutes for ingest to catch up (a week's backlog
# of a busy guild is fetched in a few minutes, 100 messages a request).
CATCH_UP_SECONDS = 600.0


class CatchingUp(UserFacingError):
    """Ingest did not handle what it had queued within CATCH_UP_SECONDS: nothing was erased."""


@dataclass(frozen=True, slots=True)
class DiscordClock:
    """Discord's time seen from here: a snowflake Discord made (a press) and when we held it."""

    base: int
    held_at: float  # time.monotonic(): the wall clock may jump, an event loop's may be simulated

    @classmethod
    def of(cls, ingest: Ingest | None, asked_at: int | None) -> DiscordClock:
        """From the press (``asked_at``), or the newest snowflake ingest has seen, whichever is
        later; with neither (no ingest in this process), from our own clock."""
        seen = ingest.newest_seen if ingest is not None else 0
        base = max(asked_at or 0, seen) or discord.utils.time_snowflake(discord.utils.utcnow())
        return cls(base, time.monotonic())

    def moment(self) -> int:
        """Now, with the margin: every message created up to now is older than this."""
        elapsed = time.monotonic() - self.held_at
        return snowflake_after(self.base, elapsed + MARGIN_MS / 1000)


@contextlib.asynccontextmanager
async def erasing(
    ingest: Ingest | None, guild_id: int | None, person_id: int, asked_at: int | None = None
) -> AsyncIterator[Callable[[], int]]:
    """Around one person's erasure in a guild (None: DMs): raise their fence, wait until ingest
    has handled what it holds for that scope, then run the erasure with the moment it yields
    (asked for at the end of the erasure's transaction). If the erasure fails, the fence comes
    down and what it held back is fetched again. ``asked_at``: the press's snowflake;
    ``ingest``: None when no ingest runs in this process (nothing else writes)."""
    clock = DiscordClock.of(ingest, asked_at)
    if ingest is None:
        yield clock.moment
        return
    if asked_at:  # the press is on Discord's clock too
        ingest.newest_seen = max(ingest.newest_seen, asked_at)
    fences = ingest.fences
    fence = fences.add(Fence(guild_id, person_id))
    try:
        await caught_up(ingest, guild_id, CATCH_UP_SECONDS)
        yield clock.moment
    except BaseException:
        fences.remove(fence)
        give_back(ingest, fence.held_back)
        raise
    fences.close(fence, clock.moment())


async def caught_up(ingest: Ingest, guild_id: int | None, timeout: float) -> None:  # noqa: ASYNC109
    """Return once ingest writes the scope's channels (a guild's; None: DMs) again and has
    handled everything queued for them until then. Raises DatabaseUnavailable if writes fail
    for the whole database meanwhile (the erasure could not run either) or ingest stops, and
    CatchingUp after ``timeout`` seconds. Waits in the calling task only (no task of its own:
    a simulator's declared wait, ``ingest.wait_outside``, covers all of it)."""

    async def bounded() -> None:
        down = ingest.when_down()
        try:
            async with asyncio.timeout(timeout):
                await ingest.gate_open(guild_id)
                loop = asyncio.get_running_loop()
                reached: list[asyncio.Future[None]] = []
                for q in list(ingest.queues.values()):
                    if q.guild_id == guild_id:
                        barrier = Barrier(loop.create_future())
                        ingest.push(q, barrier)
                        reached.append(barrier.reached)
                handled: asyncio.Future[Any] = asyncio.gather(*reached)  # a future, not a task
                either: set[asyncio.Future[Any]] = {handled, down}
                done, _ = await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                if handled not in done:
                    handled.cancel()
                    raise DatabaseUnavailable("ingest cannot write")
                if ingest.closed:  # stopping: what it held is left to the next start's backfill
                    raise DatabaseUnavailable("ingest stopped")
        except TimeoutError:
            raise CatchingUp(
                "I am still catching up with what was said while I was away, so nothing was erased"
                " yet. Try again in a few minutes."
            ) from None
        finally:
            down.cancel()

    await ingest.wait_outside(bounded())


def give_back(ingest: Ingest, held_back: dict[int, int]) -> None:
    """An erasure failed: what its fence refused meanwhile is fetched again from Discord."""
    for channel_id, oldest in held_back.items():
        q = ingest.queues.get(channel_id)
        if q is not None:
            ingest.push(q, Backfill(after=oldest - 1))


def wipe_moment(ingest: Ingest | None, asked_at: int | None = None) -> Callable[[], int]:
    """The moment of a wipe asked for at ``asked_at`` (the press), for the end of its transaction."""
    return DiscordClock.of(ingest, asked_at).moment


def narrow_after_opt_in(
    ingest: Ingest | None, guild_id: int | None, person_id: int, asked_at: int | None
) -> None:
    """/remember-me at ``asked_at``: the person's own later messages are logged again."""
    if ingest is not None and asked_at:
        ingest.fences.narrow(guild_id, person_id, asked_at)
