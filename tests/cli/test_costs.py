"""`eva stats` without `--chat`: cost per chat and this month's total against the budget."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.config import MemoryConfig
from memory.engine import MemoryEngine
from memory.storage.log import ChatKey
from memory.storage.models import UsageEntry

REPO = Path(__file__).resolve().parents[2]


def stats(tmp: Path, url: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISCORD_TOKEN", "ANTHROPIC_API_KEY", "DATA_DIR")}
    env.update(PYTHONPATH=str(REPO), DATABASE_URL=url, LOG_LEVEL="WARNING", TIMEZONE="UTC", **extra)
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "stats"],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_stats_lists_cost_per_chat_and_the_month_against_the_budget(
    tmp_path: Path, database_url: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    engine = MemoryEngine(sessions, MemoryConfig())
    general = await engine.ensure_chat(ChatKey("text", "general", discord_id=11, guild_id=5))
    await engine.ensure_chat(ChatKey("text", "quiet", discord_id=12, guild_id=5))
    now = datetime.now(UTC)
    rows = [(general, "1.2345", now), (general, "3.0000", now - timedelta(days=40)), (None, "0.5000", now)]
    async with sessions() as s, s.begin():
        for chat_id, cost, at in rows:  # None: a chat erased since; its cost still counts
            s.add(UsageEntry(chat_id=chat_id, guild_id=5, kind="reply", model="m", cost_usd=Decimal(cost),
                             created_at=at))  # fmt: skip
    done = stats(tmp_path, database_url, MONTHLY_BUDGET_USD="10")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "chat\tkind\tmessages\tcost\tthis month"
    assert lines[1] == "general\ttext\t0\t$4.2345\t$1.2345"
    assert lines[2] == "quiet\ttext\t0\t$0.0000\t$0.0000"
    month = f"{now:%Y-%m}-01"
    # 1.2345 + 0.5 this month = $1.73 of $10: 17%. The forecast's figures depend on today's date
    # (tests/memory/policy/test_budget_forecast.py works them out by hand); here, its place.
    ahead = (
        r", about \$\d+\.\d\d by the month's end at this pace \((rough|fair|steady): \d+ days? of spending\)"
    )
    runs_out = r"( At this pace the budget runs out before the month ends\.)?"
    head = re.escape(f"This month (since {month} UTC): $1.73")
    assert re.fullmatch(rf"{head} of the \$10\.00 MONTHLY_BUDGET_USD \(17%\){ahead}\.{runs_out}", lines[3])
    unset = stats(tmp_path, database_url).stdout.splitlines()[-1]
    assert re.fullmatch(rf"{head}{ahead}; no MONTHLY_BUDGET_USD set\.", unset)
    over = stats(tmp_path, database_url, MONTHLY_BUDGET_USD="1.5").stdout.splitlines()[-1]
    assert (
        over.endswith(" Replies are paused until the 1st.")
        and "of the $1.50 MONTHLY_BUDGET_USD (115%), about $" in over
    )
