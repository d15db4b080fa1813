"""The whole compaction path over HTTP: the engine's compactor, the Anthropic summarizer, the
real SDK, the local fake."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from structlog.testing import capture_logs

from memory.claude import make_client
from memory.compaction.anthropic_summarizer import AnthropicSummarizer
from memory.compaction.compactor import Compactor
from memory.engine import MemoryEngine
from memory.storage.models import TreeNode, UsageEntry
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault
from tests.memory.helpers import SMALL, message, new_chat

REPO = Path(__file__).resolve().parents[3]
Sessions = async_sessionmaker[AsyncSession]
WORDS = "tangerine " * 70  # 700 bytes: every leaf needs the model


async def test_injected_errors_are_retried_by_the_compactor_and_logged_once(sessions: Sessions) -> None:
    from memory.clock import SimulatedClock

    async with FakeAnthropic() as fake:
        fake.faults.fail_next(3, Fault("overloaded"))
        fake.faults.fail_next(2, Fault("rate_limit", retry_after=0.01))
        fake.faults.fail_next(2, Fault("api_error"))
        fake.faults.fail_fraction(0.2, Fault("overloaded"), seed=7)
        client = make_client("test", fake.base_url, timeout=5.0, max_retries=2)
        clock = SimulatedClock()
        summarizer = AnthropicSummarizer(client, model="claude-haiku-4-5")
        compactor = Compactor(sessions, SMALL, summarizer, clock)
        engine = MemoryEngine(sessions, SMALL, compactor=compactor, clock=clock)
        chat = await new_chat(engine)
        for k in range(40):
            await engine.append(chat, message(k, f"{WORDS}{k}"))
        clock.advance(SMALL.quiet_seconds + 1)
        with capture_logs() as logs:
            report = await asyncio.wait_for(engine.compact(chat, until_idle=True), timeout=120)
        await client.close()
        failures = [e for e in logs if e["event"] == "compactor.node_failed"]
        assert report.failed_calls >= 7 and report.swaps >= 1
        nodes = [e["node"] for e in failures]
        assert len(nodes) == len(set(nodes)), "each failing node is reported once"
        assert all("tangerine" not in str(e) for e in logs), "no message text in any log event"
        statuses = [entry.status for entry in fake.requests()]
        assert {429, 500, 529} <= set(statuses)
    async with sessions() as s:
        built = await s.scalar(select(func.count()).select_from(TreeNode).where(TreeNode.by_model))
        ledger = await s.scalar(
            select(func.count()).select_from(UsageEntry).where(UsageEntry.kind == "compact")
        )
    assert built and built >= 40
    assert ledger == report.calls


def test_eva_compact_builds_a_tree_over_http_and_stats_show_the_ledger(
    tmp_path: Path, database_url: str, sessions: Sessions, shared_data: Path
) -> None:
    corpus = tmp_path / "slice.jsonl"
    lines = (shared_data / "irc" / "stripe.jsonl").read_text().splitlines()[:600]
    corpus.write_text("\n".join(lines) + "\n")
    fake_proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.anthropic_api", "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert fake_proc.stdout is not None
        base_url = next(line.split()[-1] for line in iter(fake_proc.stdout.readline, "") if "http://" in line)
        env = {k: v for k, v in os.environ.items() if k not in ("DISCORD_TOKEN", "DATA_DIR")}
        env.update(
            PYTHONPATH=str(REPO),
            DATABASE_URL=database_url,
            ANTHROPIC_API_KEY="test",
            ANTHROPIC_BASE_URL=base_url,
            LOG_LEVEL="WARNING",
            VIEW_HIGH="8000",
            VIEW_LOW="4000",
            TAIL_START="4000",
            TAIL_KEEP="1000",
            TAIL_FORCE="8000",
            TAIL_CAP="12000",
        )

        def eva(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "bot.cli", *args],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )

        assert eva("import", str(corpus), "--chat", "stripe").returncode == 0
        done = eva("compact", "--chat", "stripe", "--until-idle")
        assert done.returncode == 0, done.stderr
        assert "swaps 1" in done.stdout or "swaps" in done.stdout
        stats = eva("stats", "--chat", "stripe")
        assert stats.returncode == 0, stats.stderr
        compact_line = next(line for line in stats.stdout.splitlines() if line.startswith("compact:"))
        calls = int(compact_line.split()[1])
        assert calls > 0
        assert "$0.0000" not in compact_line  # priced at claude-haiku-4-5 list price
        view = eva("view", "--chat", "stripe").stdout
        assert view.count("\n") > 10 and "+" in view.split("\n")[1]
    finally:
        fake_proc.terminate()
        fake_proc.wait(timeout=10)
