"""`eva export --user ID`: the host's copy of /export-me's file, every chat, as JSON."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory import MemoryConfig, MemoryEngine, SimulatedClock
from memory.storage.log import ChatKey
from tests.cli.test_memory_commands import one_line_error, run
from tests.memory.reading.test_export import ALICE, BOB, GUILD, T0, said


async def test_eva_export_writes_the_persons_messages_of_every_chat(
    tmp_path: Path, database_url: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    engine = MemoryEngine(sessions, MemoryConfig(), clock=SimulatedClock(T0))
    general = await engine.ensure_chat(ChatKey("text", "general", discord_id=1, guild_id=GUILD))
    dm = await engine.ensure_chat(ChatKey("dm", "dm-alice", discord_id=2, recipient_id=ALICE))
    await engine.append_many(general, [said(ALICE, 0, "alice one"), said(BOB, 1, "bob canary c0ffee")])
    await engine.append_many(dm, [said(ALICE, 2, "alice in dm")])
    done = run(tmp_path, database_url, "export", "--user", str(ALICE))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [m["text"] for m in data["messages"]] == ["alice one", "alice in dm"]
    assert data["scope"] == "everywhere" and "c0ffee" not in done.stdout
    out = tmp_path / "alice.json"
    assert run(tmp_path, database_url, "export", "--user", str(ALICE), "--out", str(out)).returncode == 0
    assert json.loads(out.read_text())["message_count"] == 2
    again = one_line_error(run(tmp_path, database_url, "export", "--user", str(ALICE), "--out", str(out)))
    assert "choose another --out" in again
