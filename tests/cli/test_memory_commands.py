"""The memory CLI as a person uses it: import a real export, view,
zoom, recall; bad input gives one clear line, exit code 2, and changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISCORD_TOKEN", "ANTHROPIC_API_KEY", "DATA_DIR")}
    env.update(PYTHONPATH=str(REPO), DATABASE_URL=url, LOG_LEVEL="WARNING")
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def cli_db(database_url: str, sessions: object) -> str:
    """The test database, emptied by the `sessions` fixture before each test."""
    return database_url


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_import_view_zoom_recall_on_the_rust_export(tmp_path: Path, cli_db: str, shared_data: Path) -> None:
    export = shared_data / "irc" / "rust.dce.json"
    done = run(tmp_path, cli_db, "import", str(export), "--chat", "rust")
    assert done.returncode == 0, done.stderr
    assert "imported 3576 messages" in done.stdout
    compacted = run(tmp_path, cli_db, "compact", "--chat", "rust", "--until-idle", "--fake-model")
    assert compacted.returncode == 0, compacted.stderr
    view = run(tmp_path, cli_db, "view", "--chat", "rust")
    assert view.returncode == 0
    text = view.stdout
    assert text.startswith("<memory>\n") and "\n</memory>\n" in text
    row, tail = text.split("</memory>\n", 1)
    row_lines = row.splitlines()[1:]
    assert row_lines and row_lines[0].startswith("0+")
    assert tail.splitlines()[-1].startswith("#3575 ")
    first_address = row_lines[0].split(" ", 1)[0]
    zoom = run(tmp_path, cli_db, "zoom", "--chat", "rust", first_address)
    assert zoom.returncode == 0 and len(zoom.stdout.splitlines()) == 2
    message = run(tmp_path, cli_db, "zoom", "--chat", "rust", "0+1")
    assert message.stdout.startswith("#0 2018-05-29 21:20 talchas: but I don't know that I'd bother")
    recall = run(tmp_path, cli_db, "recall", "--chat", "rust", "borrow", "checker")
    assert recall.returncode == 0 and "Hit 1: message #" in recall.stdout
    stats = run(tmp_path, cli_db, "stats", "--chat", "rust")
    assert "Messages: 3,576 logged" in stats.stdout and "compact:" in stats.stdout

    # Bad input: one line, exit code 2, nothing changed.
    before = run(tmp_path, cli_db, "view", "--chat", "rust").stdout
    assert "multiple of 2" in one_line_error(run(tmp_path, cli_db, "zoom", "--chat", "rust", "3+2"))
    assert "only 3576" in one_line_error(run(tmp_path, cli_db, "zoom", "--chat", "rust", "999999+1"))
    assert "no chat named" in one_line_error(run(tmp_path, cli_db, "view", "--chat", "nope"))
    assert "already has 3576" in one_line_error(
        run(tmp_path, cli_db, "import", str(export), "--chat", "rust")
    )
    assert "no such file" in one_line_error(run(tmp_path, cli_db, "import", "missing.json", "--chat", "x"))
    assert run(tmp_path, cli_db, "view", "--chat", "rust").stdout == before


def test_a_malformed_file_imports_nothing(tmp_path: Path, cli_db: str) -> None:
    bad = tmp_path / "bad.jsonl"
    good = '{"i": 0, "author": "pia", "text": "hi", "date": "2026-01-01T10:00:00Z"}\n'
    bad.write_text(good + good.replace('"i": 0', '"i": 1') + '{"i": 2, "author": "max", "text": \n')
    line = one_line_error(run(tmp_path, cli_db, "import", str(bad), "--chat", "broken"))
    assert "line 3" in line
    listing = run(tmp_path, cli_db, "stats")
    assert "broken" not in listing.stdout  # the chat was not even created


def test_forget_rejects_a_bad_guild(tmp_path: Path, cli_db: str) -> None:
    assert "--guild takes" in one_line_error(run(tmp_path, cli_db, "forget", "--guild", "abc", "--user", "1"))
