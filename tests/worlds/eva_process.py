"""The real `eva` as a subprocess for the whole-process tests (tests/bot/test_whole_process*.py,
tests/cli, tests/hardening): started with its settings pointing at the local Discord and
Anthropic fakes, its JSON log lines collected as they come."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from memory.storage.database import make_engine, make_sessions
from memory.storage.embedded import asyncpg_url
from memory.storage.models import Message
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord

REPO = Path(__file__).resolve().parents[2]
READY_SECONDS = 30.0  # first start with the embedded database: initdb + migrations, ~5 s here
T = TypeVar("T")


class EvaProcess:
    """`python -m bot.cli run` (or another command), its JSON log lines collected as they come."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.events: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stderr is not None
        async for line in self.proc.stderr:
            text = line.decode(errors="replace").rstrip()
            self.raw.append(text)
            with contextlib.suppress(ValueError):
                self.events.append(json.loads(text))

    async def wait_for(self, event: str, within: float = READY_SECONDS) -> dict[str, Any]:
        async with asyncio.timeout(within):
            while True:
                for entry in self.events:
                    if entry.get("event") == event:
                        return entry
                if self.proc.returncode is not None:
                    last_lines = "\n".join(self.raw[-30:])
                    raise AssertionError(f"eva exited ({self.proc.returncode}):\n{last_lines}")
                await asyncio.sleep(0.05)

    async def terminate(self, within: float = 20.0) -> int:
        self.proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(within):
            code = await self.proc.wait()
            await self._reader
        return code

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()


async def start_eva(
    cwd: Path, environment: dict[str, str], command: str = "run", arguments: tuple[str, ...] = ()
) -> EvaProcess:
    """`python -m bot.cli COMMAND ARGUMENTS...` with JSON logs; LOG_LEVEL as ``environment`` says
    (INFO by default)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "DISCORD_", "ANTHROPIC_"))}
    env.update({"LOG_FORMAT": "json", "LOG_LEVEL": "INFO", "PYTHONPATH": str(REPO), **environment})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", command, *arguments, cwd=cwd, env=env, stderr=asyncio.subprocess.PIPE
    )
    return EvaProcess(proc)


async def eventually(
    check: Callable[[], Awaitable[T | None]], within: float = 10.0, every: float = 0.05
) -> T:
    """The first truthy result of ``check``, polled every ``every`` seconds for ``within`` seconds."""
    async with asyncio.timeout(within):
        while True:
            result = await check()
            if result:
                return result
            await asyncio.sleep(every)


async def logged_message(sessions: async_sessionmaker[AsyncSession], snowflake: int) -> Message | None:
    async with sessions() as s:
        return await s.scalar(select(Message).where(Message.snowflake == snowflake))


def endpoints(discord_fake: FakeDiscord, anthropic_fake: FakeAnthropic, data_dir: Path) -> dict[str, str]:
    return {
        "DISCORD_TOKEN": "fake-token",
        "DISCORD_API_BASE": discord_fake.api_base,
        "DISCORD_GATEWAY_URL": discord_fake.gateway_url,
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": anthropic_fake.base_url,
        "DATA_DIR": str(data_dir),
        "DEBOUNCE_SECONDS": "0.1",
    }


def embedded_database(pgdata: Path) -> tuple[AsyncEngine, async_sessionmaker[AsyncSession]]:
    """Engine and sessions on the `eva` database of the embedded server in ``pgdata`` (its socket
    is there too), for a test to look into what the process stored."""
    engine = make_engine(asyncpg_url(f"postgresql://postgres@/postgres?host={pgdata}", "eva"))
    return engine, make_sessions(engine)


def postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class EmbeddedFolder:
    """DATA_DIR of an `eva` run with no DATABASE_URL (workdir/data) and, in it, the folder of the
    PostgreSQL server that run starts (data/pg)."""

    data_dir: Path

    @classmethod
    def under(cls, workdir: Path) -> EmbeddedFolder:
        return cls(workdir / "data")

    @property
    def pgdata(self) -> Path:
        return (self.data_dir / "pg").resolve()

    def stop_orphaned_server(self) -> None:
        """A server a killed or failed run left behind gets SIGTERM (PostgreSQL's smart shutdown)."""
        pid = postmaster_pid(self.pgdata)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)


@dataclass
class ProcessWorld:
    """Both fakes, a working folder and the test database: what an `eva` process is pointed at."""

    discord: FakeDiscord
    anthropic: FakeAnthropic
    workdir: Path
    database_url: str
    started: list[EvaProcess]

    @property
    def environment(self) -> dict[str, str]:
        return {
            **endpoints(self.discord, self.anthropic, self.workdir / "data"),
            "DATABASE_URL": self.database_url,
        }

    async def start(self, command: str = "run", *arguments: str, **settings: str) -> EvaProcess:
        """`eva COMMAND ARGUMENTS...` on the fakes and the test database; killed at the test's end
        if still running."""
        process = await start_eva(self.workdir, {**self.environment, **settings}, command, arguments)
        self.started.append(process)
        return process

    async def run(self, **settings: str) -> EvaProcess:
        """`eva run`, once it has logged bot.ready (connected, guilds received)."""
        process = await self.start("run", **settings)
        await process.wait_for("bot.ready")
        return process
