"""The container's health check: the heartbeat `eva run` writes and `eva health` reads. Pure
verdicts first, then `eva health` on files, then the whole process against the fakes: healthy,
then the database stops answering, then the gateway goes away."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.health import Heartbeat, read, verdict, write
from tests.cli.support import eva
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.worlds.eva_process import endpoints, eventually, postmaster_pid, start_eva

NOW = 1_800_000_000.0


def beat(
    age: float = 1.0, connected: bool = True, database_age: float | None = 1.0, interval: float = 15.0
) -> Heartbeat:
    answered = None if database_age is None else NOW - database_age
    return Heartbeat(NOW - age, connected, answered, interval)


def test_verdicts() -> None:
    assert verdict(beat(), NOW) is None
    assert verdict(beat(age=59.0, database_age=59.0), NOW) is None  # 4 intervals of 15 s
    assert "no heartbeat" in str(verdict(None, NOW))
    assert "no heartbeat for 61 s" in str(verdict(beat(age=61.0), NOW))
    assert verdict(beat(connected=False), NOW) == "not connected to the Discord gateway"
    assert verdict(beat(database_age=None), NOW) == "the database does not answer"
    assert verdict(beat(database_age=61.0), NOW) == "the database does not answer"
    assert (
        verdict(beat(age=3.0, database_age=3.0, interval=0.5), NOW)
        == "the bot wrote no heartbeat for 3 s: it is stuck or stopped"
    )


def test_a_heartbeat_survives_the_round_trip_and_garbage_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "health.json"
    write(path, beat())
    assert read(path) == beat()
    path.write_text("{not json")
    assert read(path) is None
    assert read(tmp_path / "missing.json") is None


async def test_eva_health_is_silent_when_healthy_and_one_line_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "health.json"
    write(path, Heartbeat(time.time(), True, time.time(), 15.0))
    healthy = await eva(tmp_path, "health", HEALTH_FILE=str(path))
    assert (healthy.code, healthy.lines) == (0, [])
    write(path, Heartbeat(time.time(), False, time.time(), 15.0))
    down = await eva(tmp_path, "health", HEALTH_FILE=str(path))
    assert (down.code, down.lines) == (1, ["not connected to the Discord gateway"])
    unset = await eva(tmp_path, "health")
    assert unset.code == 2 and unset.lines == [
        "eva health: HEALTH_FILE is not set: `eva run` writes no heartbeat to check"
    ]


@pytest.fixture
def workdir() -> Iterator[Path]:
    folder = Path(
        tempfile.mkdtemp(prefix="eva-test-health-")
    )  # not tmp_path: see the workdir fixture in tests/conftest.py
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def test_the_running_bot_reports_gateway_and_database(workdir: Path) -> None:
    health_file = workdir / "health.json"
    data_dir = workdir / "data"
    pgdata = (data_dir / "pg").resolve()
    health_file.write_text(
        '{"written_at": 9e12, "gateway_connected": true, "database_answered_at": 9e12, "interval": 1}'
    )

    async def health() -> tuple[int, list[str]]:
        done = await eva(workdir, "health", HEALTH_FILE=str(health_file))
        return done.code, done.lines

    async with FakeDiscord() as discord_fake, FakeAnthropic() as anthropic_fake:
        environment = {**endpoints(discord_fake, anthropic_fake, data_dir),
                       "HEALTH_FILE": str(health_file), "HEALTH_INTERVAL": "0.3"}  # fmt: skip
        bot = await start_eva(workdir, environment)
        try:
            await bot.wait_for("bot.ready")

            async def written_by_this_run() -> bool:
                found = read(health_file)
                return found is not None and found.interval == 0.3 and found.gateway_connected

            await eventually(written_by_this_run)  # the stale file from "before" was replaced
            assert await health() == (0, [])

            server = postmaster_pid(pgdata)
            assert server is not None
            # The bot starts a stopped embedded server again within 5 s (bot/database.py),
            # so a plain stop would be seen for a moment only. Without PG_VERSION a start fails
            # ("not a valid data directory"): the server stays gone until the file is back. A
            # running server does not read the file again.
            version_file = pgdata / "PG_VERSION"
            version_file.rename(pgdata / "PG_VERSION.away")
            os.kill(server, signal.SIGINT)  # fast shutdown: the database is gone

            async def says(expected: str) -> bool:
                return await health() == (1, [expected])

            await eventually(lambda: says("the database does not answer"), within=20)
            await discord_fake.stop()  # and Discord with it: the gateway cannot reconnect
            await eventually(lambda: says("not connected to the Discord gateway"), within=20)
        finally:
            bot.kill()
            if (pgdata / "PG_VERSION.away").exists():
                (pgdata / "PG_VERSION.away").rename(pgdata / "PG_VERSION")
            pid = postmaster_pid(pgdata)
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
