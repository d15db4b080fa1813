"""`eva dashboard-link`: the host's one-time sign-in link, printed once and stored only as a
hash; without DASHBOARD_PORT, one line saying what to set."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory import LinkRefused, MemoryConfig, build
from memory.storage.models import DashboardLink

REPO = Path(__file__).resolve().parents[2]


def run(tmp: Path, url: str, **settings: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISCORD_", "ANTHROPIC_", "DASHBOARD_"))}
    env.update(PYTHONPATH=str(REPO), DATABASE_URL=url, **{"LOG_LEVEL": "DEBUG", **settings})
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "dashboard-link"], cwd=tmp, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


@pytest.fixture
def cli_db(database_url: str, sessions: object) -> str:
    return database_url


def test_without_a_dashboard_it_says_what_to_set(tmp_path: Path, cli_db: str) -> None:
    done = run(tmp_path, cli_db, LOG_LEVEL="WARNING")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        "eva dashboard-link: the dashboard is off: set DASHBOARD_PORT for `eva run` (and here) first"
    )


async def test_the_link_signs_the_host_in_once_and_only_its_hash_is_kept(
    tmp_path: Path, cli_db: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    done = run(tmp_path, cli_db, DASHBOARD_PORT="8080", DASHBOARD_PUBLIC_URL="https://eva.example.org/")
    assert done.returncode == 0, done.stderr
    found = re.fullmatch(r"https://eva\.example\.org/signin\?t=([A-Za-z0-9_-]{43})\n", done.stdout)
    assert found, done.stdout
    secret = found.group(1)
    assert secret not in done.stderr  # not in the logs, even at DEBUG
    async with sessions() as s:
        rows = (await s.scalars(select(DashboardLink))).all()
    assert [(r.token_hash, r.guild_id, r.user_id) for r in rows] == [
        (hashlib.sha256(secret.encode()).digest(), None, None)
    ]
    engine = build(sessions, MemoryConfig())
    grant = await engine.redeem_dashboard_link(secret)
    assert (grant.guild_id, grant.user_id) == (None, None)
    with pytest.raises(LinkRefused, match="used already"):
        await engine.redeem_dashboard_link(secret)
