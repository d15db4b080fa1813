"""`eva run`, `eva doctor` and the embedded database, as a person runs them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from memory.storage import migrate

REPO = Path(__file__).resolve().parents[2]
EVA = [sys.executable, "-m", "bot.cli"]
SETTING_NAMES = (
    "DISCORD_TOKEN",
    "ANTHROPIC_API_KEY",
    "DATABASE_URL",
    "DATA_DIR",
    "ANTHROPIC_BASE_URL",
    "DISCORD_API_BASE",
)


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.upper() not in SETTING_NAMES}
    env["PYTHONPATH"] = str(REPO)
    env["DATA_DIR"] = str(tmp_path / "data")
    env.update(extra)
    return env


def postgres_processes(data_dir: Path) -> list[int]:
    """Live (not zombie) postgres processes serving ``data_dir``."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        serving = proc.info["name"] == "postgres" and str(data_dir) in cmdline
        if serving and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.info["pid"])
    return found


def eva(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EVA, *args],
        cwd=tmp_path,
        env=clean_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_run_without_tokens_migrates_embedded_db_then_names_missing_settings(tmp_path: Path) -> None:
    done = eva(tmp_path, "run")
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert "DISCORD_TOKEN" in last and "ANTHROPIC_API_KEY" in last
    assert (tmp_path / "data" / "pg" / "PG_VERSION").exists()  # the embedded server was created
    assert postgres_processes(tmp_path / "data") == []
    # migrations were applied before it stopped: doctor finds them current (its Discord and
    # Anthropic checks are tests/cli/test_doctor.py's; without tokens they only say so)
    ok = eva(tmp_path, "doctor")
    assert f"database: ok (migrations current at {migrate.head_revision()})" in ok.stdout.splitlines(), (
        ok.stdout
    )
    assert "settings: ok" in ok.stdout.splitlines()
    assert postgres_processes(tmp_path / "data") == []


def test_a_killed_owner_leaves_a_server_the_next_run_adopts_and_stops(tmp_path: Path) -> None:
    data = tmp_path / "data"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from memory.storage.embedded import EmbeddedPostgres;"
            "EmbeddedPostgres(Path(sys.argv[1])).start(); print('up', flush=True); time.sleep(600)",
            str(data),
        ],
        cwd=REPO,
        env=clean_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert holder.stdout is not None
    lines = (line.strip() for line in iter(holder.stdout.readline, ""))
    assert "up" in lines, "the holder never started its server"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert postgres_processes(data), "the orphaned server should still be running"
    done = eva(tmp_path, "run")
    assert done.returncode == 2, done.stderr
    time.sleep(0.5)
    assert postgres_processes(data) == []


def test_doctor_reports_each_problem_on_its_own_line(tmp_path: Path) -> None:
    done = eva(tmp_path, "doctor", DATABASE_URL="postgresql://eva@127.0.0.1:1/eva")
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 1
    assert "discord: DISCORD_TOKEN is not set" in lines
    assert "anthropic: ANTHROPIC_API_KEY is not set" in lines
    assert any(line.startswith("database: cannot reach the database at DATABASE_URL") for line in lines)
    assert len(lines) == 4
    assert [line for line in lines if line.split(": ", 1)[1].startswith("ok")] == ["settings: ok"]


def test_secrets_never_printed(tmp_path: Path) -> None:
    # Closed local ports: the tokens are used (and refused by nobody), never printed.
    done = eva(
        tmp_path,
        "doctor",
        DISCORD_TOKEN="tok-SECRET-123",
        ANTHROPIC_API_KEY="key-SECRET-456",
        DATABASE_URL="postgresql://eva:pw-SECRET-789@127.0.0.1:1/eva",
        DISCORD_API_BASE="http://127.0.0.1:9/api/v10",
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
    )
    out = done.stdout + done.stderr
    assert "SECRET" not in out
    assert done.returncode == 1


@pytest.mark.parametrize("bad", ["VIEW_HIGH=abc", "TIMEZONE=Mars/Olympus"])
def test_malformed_setting_is_one_clear_line(tmp_path: Path, bad: str) -> None:
    key, value = bad.split("=")
    done = eva(tmp_path, "doctor", **{key: value})
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert key in done.stderr
