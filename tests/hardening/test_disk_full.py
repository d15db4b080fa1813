"""The database's disk fills up under the real `eva run` (its data folder, with the embedded
PostgreSQL in it, on a small filesystem of its own): once space is freed and the bot has run a
minute, every message posted meanwhile is logged, once, in order.

Two ways a full disk shows, one after the other in the same run: statements fail with
SQLSTATE 53100 (a table cannot grow) while the server stays up; then a new WAL segment cannot
be made, the WAL writer PANICs, crash recovery cannot write WAL either and the postmaster shuts
down: the bot starts it again once the disk has room (bot/database.py).

Needs root and a tmpfs mount (CI runs as root on the same kind of machine); skipped otherwise,
saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from memory.storage.models import Message
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.worlds.eva_process import (
    EmbeddedFolder,
    embedded_database,
    endpoints,
    eventually,
    postmaster_pid,
    start_eva,
)

# initdb and the migrations take ~50 MB (a 16 MB WAL segment included); the rest is ballast.
FILESYSTEM_MB = 128
RECOVERY_SECONDS = 60.0  # "once space is freed and the bot has run a minute"
LONG = 1_800  # characters: a message that needs room of its own in the table or its TOAST


@pytest.fixture
def small_filesystem(embedded_folder: EmbeddedFolder) -> Iterator[Path]:
    """DATA_DIR on a tmpfs of FILESYSTEM_MB, unmounted at the end (after the server stopped)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root (CI runs these tests as root)")
    mount = embedded_folder.data_dir
    mount.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={FILESYSTEM_MB}m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode})")
    try:
        yield mount
    finally:
        embedded_folder.stop_orphaned_server()
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder: Path) -> Path:
    """A ballast file that takes every free byte of ``folder``'s filesystem."""
    ballast = folder / "ballast"
    with ballast.open("wb", buffering=0) as out:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            with contextlib.suppress(OSError):
                while True:
                    out.write(block)
    assert os.statvfs(folder).f_bavail == 0, "the filesystem is full"
    return ballast


def post_burst(discord_fake: FakeDiscord, label: str, count: int = 23) -> None:
    """``count`` messages of alice and bob in #general; every third one long."""
    ids = discord_fake.ids
    for k in range(count):
        body = f"{label} {k}" + (" about the tent and the lake" * (LONG // 28) if k % 3 == 0 else "")
        discord_fake.chat.post_user_message(ids.general, ids.bob if k % 2 else ids.alice, body)


async def logged_snowflakes(engine: AsyncEngine) -> list[int] | None:
    """Snowflakes in log order, or None while the server does not answer."""
    try:
        async with engine.connect() as conn:
            rows = (
                await conn.execute(select(Message.snowflake).order_by(Message.chat_id, Message.idx))
            ).all()
    except Exception:
        await engine.dispose()  # the server restarted: connect afresh next time
        return None
    return [int(r[0]) for r in rows if r[0] is not None]


async def test_a_full_disk_loses_no_message_once_space_is_freed(
    small_filesystem: Path, embedded_folder: EmbeddedFolder, workdir: Path
) -> None:
    async with FakeAnthropic() as anthropic, FakeDiscord() as discord_fake:
        ids, chat = discord_fake.ids, discord_fake.chat
        engine, _ = embedded_database(embedded_folder.pgdata)
        eva = await start_eva(workdir, endpoints(discord_fake, anthropic, small_filesystem))
        try:
            await eva.wait_for("bot.ready")
            first = chat.post_user_message(ids.general, ids.alice, "logged before the disk fills")
            await eventually(lambda: _holds(engine, [int(first["id"])]), within=20)

            # 1. Statements fail (SQLSTATE 53100) while the server stays up.
            ballast = fill(small_filesystem)
            post_burst(discord_fake, "full disk")
            await asyncio.sleep(6)  # the bot tries to write them meanwhile
            while_full = await logged_snowflakes(engine)
            expected = [int(m["id"]) for m in discord_fake.world.channel_messages(ids.general)]
            assert while_full is not None and while_full != expected, "the disk was really full"
            assert eva.proc.returncode is None
            ballast.unlink()
            await eventually(lambda: _holds(engine, expected), within=RECOVERY_SECONDS, every=0.5)

            # 2. A new WAL segment cannot be made: the server PANICs and shuts itself down.
            ballast = fill(small_filesystem)
            with contextlib.suppress(Exception):
                async with engine.connect() as conn:
                    await conn.execute(text("SELECT pg_switch_wal()"))  # the next write needs a new segment
            post_burst(discord_fake, "no wal")
            await eventually(lambda: _server_gone(embedded_folder), within=30)  # PANIC, then shut down
            await asyncio.sleep(3)
            assert eva.proc.returncode is None, "the bot outlives its database"
            await asyncio.sleep(3)
            ballast.unlink()
            expected = [int(m["id"]) for m in discord_fake.world.channel_messages(ids.general)]
            assert len(expected) == 47
            await eventually(lambda: _holds(engine, expected), within=RECOVERY_SECONDS, every=0.5)
            await engine.dispose()

            assert await eva.terminate(within=30) == 0
            assert not any("Traceback" in line for line in eva.raw)
            unavailable = [e for e in eva.events if e.get("event") == "ingest.database_unavailable"]
            assert {e.get("sqlstate") for e in unavailable} >= {"53100"}, (
                "a full disk is retried, not dropped"
            )
            assert not [e for e in eva.events if e.get("event") == "ingest.write_failed"]
            assert [e for e in eva.events if e.get("event") == "embedded_postgres.restarted"]
        finally:
            await engine.dispose()
            eva.kill()
            await asyncio.sleep(0)


async def _server_gone(folder: EmbeddedFolder) -> bool:
    pid = postmaster_pid(folder.pgdata)
    return pid is None or not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(") ", 1)[1][:1] != "Z"  # a zombie is dead
    except (OSError, IndexError):
        return False


async def _holds(engine: AsyncEngine, expected: list[int]) -> Any:
    return await logged_snowflakes(engine) == expected
