"""Limits that protect the host's bill, each with one short message to show.

- Per-user cooldown (USER_COOLDOWN_SECONDS): per person per channel, a trigger inside the
  window waits for its end, then one turn answers it and whatever came meanwhile
  (bot/reply/cooldown.py); nothing is dropped and nothing is said in public.
- Per-guild monthly reply cap (GUILD_MONTHLY_REPLY_CAP, 0 = off): reply turns this calendar
  month, counted from the usage ledger, so the count survives restarts and sees every process.
- Tool steps (TOOL_STEPS): model calls per turn; enforced by the turn loop (bot/core/turn.py).

How turns are counted from the ledger: every model call of one turn is written in ONE
transaction at the end of the turn (:func:`record_turn_usage`). The ledger's ``created_at``
defaults to PostgreSQL's ``now()``, which is the transaction's start time, so the rows of one
turn share it exactly and ``count(DISTINCT created_at)`` counts turns, not calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory import MemoryEngine, PriceTable, Usage

CAP_NOTE = (
    "I've used up this server's replies for the month, so I'll be quiet until the 1st. "
    "(The host can raise GUILD_MONTHLY_REPLY_CAP.)"
)
CLAUDE_DOWN_NOTE = "Sorry, I can't think right now. Try again in a minute?"
SOMETHING_BROKE_NOTE = "Something went wrong on my side. Try again in a minute?"
EMPTY_REPLY_NOTE = "Hm, I lost my train of thought. Ask me again?"


async def record_turn_usage(
    engine: MemoryEngine,
    *,
    chat_id: int | None,
    guild_id: int | None,
    model: str,
    usages: Sequence[Usage],
    prices: PriceTable,
) -> None:
    """Every model call of one turn, in one transaction (see the module docstring)."""
    await engine.record_usage(
        chat_id=chat_id, guild_id=guild_id, kind="reply", model=model, usages=usages, prices=prices
    )


async def replies_this_month(engine: MemoryEngine, guild_id: int, now: datetime) -> int:
    """Reply turns recorded for ``guild_id`` since the 1st of this month in the configured zone
    (the month `/memory status` shows: MemoryEngine.month_start)."""
    return await engine.reply_turns_since(guild_id, engine.month_start(now))


async def over_monthly_cap(engine: MemoryEngine, *, cap: int, guild_id: int | None, now: datetime) -> bool:
    """True when the guild has used its monthly reply turns (never for DMs or with cap 0)."""
    if cap <= 0 or guild_id is None:
        return False
    return await replies_this_month(engine, guild_id, now) >= cap
