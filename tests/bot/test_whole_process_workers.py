"""Three `eva worker` processes and one `eva run` (its own compactor on) on one database after
a 20,000-message import (and eleven smaller chats): every node is built exactly once (no task
asked of the model twice, one ledger row per call), and every row keeps its invariants. The
per-chat advisory lock (memory/compaction/compactor.py) is what keeps the four apart."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.scheduler import TICK_SECONDS
from memory.config import MemoryConfig
from memory.reading.row_audit import check_row, settled
from memory.storage.models import Chat, TreeNode, UsageEntry
from tests.cli.support import eva
from tests.fakes.anthropic_compactor import first_try_tasks
from tests.worlds.eva_process import ProcessWorld, eventually

Sessions = async_sessionmaker[AsyncSession]
# One big chat (one builder at a time: the lock) and eleven more, so that each process, which
# compacts up to four chats at once (bot/scheduler.py, CHATS_AT_ONCE), finds chats the others hold.
CHATS = {"big": 20_000} | {f"small-{k}": 500 for k in range(11)}
WORKERS = 3


def export(path: Path, messages: int) -> Path:
    """A JSONL export: three people, messages of 60 to 200 bytes, one a minute from 2025; each
    names its chat, so a task's input tells which chat's node it builds."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(messages):
            text = f"{path.stem} message {i} on the trip plans, " + "who brings what and when we leave, " * (
                i % 5
            )
            minute = i
            date = f"2025-01-{1 + minute // 1440:02d}T{minute // 60 % 24:02d}:{minute % 60:02d}:00Z"
            out.write(json.dumps({"i": i, "author": f"p{i % 3}", "text": text, "date": date}) + "\n")
    return path


async def test_three_workers_and_a_gateway_build_every_node_exactly_once(
    processes: ProcessWorld, sessions: Sessions
) -> None:
    anthropic_fake, workdir = processes.anthropic, processes.workdir
    for name, count in CHATS.items():
        done = await eva(workdir, "import", str(export(workdir / f"{name}.jsonl", count)), "--chat", name,
                         DATABASE_URL=processes.database_url, LOG_LEVEL="WARNING")  # fmt: skip
        assert done.code == 0, done.lines
    # Each one's first tick sweeps every chat: the workers find the gateway at work.
    workers = [await processes.start("worker") for _ in range(WORKERS)]
    gateway = await processes.start("run")
    await gateway.wait_for("bot.ready", within=60)  # three compactors beside it on two cores
    for worker in workers:
        await worker.wait_for("worker.started")
    async with sessions() as s:
        chat_ids = list((await s.scalars(select(Chat.id).where(Chat.kind == "imported"))).all())
    assert len(chat_ids) == len(CHATS)
    config = MemoryConfig()

    async def all_settled() -> bool:
        return all([(await settled(sessions, chat_id, config))[0] for chat_id in chat_ids])

    await eventually(all_settled, within=600, every=2.0)
    for process in (gateway, *workers):
        assert await process.terminate() == 0

    calls = [entry for entry in anthropic_fake.requests("compact") if entry.status == 200]
    asked = Counter((task.kind, task.input_text) for entry in calls for task in first_try_tasks(entry.body))
    twice = [key for key, times in asked.items() if times > 1]
    assert twice == [], f"{len(twice)} nodes were asked of the model more than once"
    async with sessions() as s:
        by_model = await s.scalar(select(func.count()).where(TreeNode.by_model.is_(True)))
        free = await s.scalar(select(func.count()).where(TreeNode.by_model.is_(False)))
        ledger = await s.scalar(select(func.count()).where(UsageEntry.kind == "compact"))
    assert by_model == sum(asked.values()) > 1000
    assert ledger == len(calls), "one ledger row per call: none booked twice, none lost"
    for chat_id in chat_ids:
        check = await check_row(sessions, chat_id, config)
        assert check.problems == [], (chat_id, check.problems)
    # Nodes each process built (by the model or free): the lock had several builders to keep apart.
    built = [
        sum(e.get("nodes", 0) for e in process.events if e.get("event") == "compactor.tick")
        for process in (gateway, *workers)
    ]
    assert sum(1 for nodes in built if nodes) >= 2, built
    print(f"{by_model} nodes by the model, {free} free, {len(calls)} calls; nodes per process {built}")


async def test_a_gateway_run_without_its_compactor_leaves_the_building_to_a_worker(
    processes: ProcessWorld, sessions: Sessions
) -> None:
    """`eva run --no-compactor`: an imported chat waiting to be built stays unbuilt beside the
    gateway (whose first tick, with the compactor, would sweep it at once) until a worker starts."""
    anthropic_fake, workdir = processes.anthropic, processes.workdir
    done = await eva(workdir, "import", str(export(workdir / "waiting.jsonl", 1_000)), "--chat", "waiting",
                     DATABASE_URL=processes.database_url, LOG_LEVEL="WARNING")  # fmt: skip
    assert done.code == 0, done.lines
    gateway = await processes.start("run", "--no-compactor")
    await gateway.wait_for("bot.ready", within=60)
    await asyncio.sleep(2 * TICK_SECONDS)  # two of its ticks
    assert anthropic_fake.requests("compact") == []
    async with sessions() as s:
        assert await s.scalar(select(func.count()).select_from(TreeNode)) == 0
    worker = await processes.start("worker")

    async def building() -> bool:
        return bool(anthropic_fake.requests("compact"))

    await eventually(building, within=60)
    for process in (gateway, worker):
        assert await process.terminate() == 0
