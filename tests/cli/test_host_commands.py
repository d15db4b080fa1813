"""What a host meets at the command line, through the real `eva` process: a compaction whose
model calls cannot succeed ends with one line naming the setting (exit 1) instead of retrying
forever; a bad DATA_DIR is named with its path; progress shows as plain lines when stderr is not
a terminal; `eva --help` and `eva --version` answer."""

from __future__ import annotations

import io
import json
import os
import pty
from pathlib import Path

import pytest

from bot.cli.progress import finished, progress
from tests.cli.support import Done, eva
from tests.cli.test_failures_one_line import one_clear_line
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault

GOOD_KEY = "sk-good"
NOTHING_LISTENS = "http://127.0.0.1:9"  # the discard port: connection refused on a test machine


def long_chat(path: Path, messages: int = 100) -> Path:
    """A JSONL export whose messages are too long to be their own line (each needs the model),
    70 KB in all: past the 48 KB raw tail that arms a compaction (memory/config.py)."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(messages):
            text = f"message {i} " + "about the release plan and who tests what, " * 16
            out.write(json.dumps({"i": i, "author": f"p{i % 3}", "text": text,
                                  "date": f"2025-01-01T{10 + i // 60:02d}:{i % 60:02d}:00Z"}) + "\n")  # fmt: skip
    return path


@pytest.fixture
async def imported(tmp_path: Path, database_url: str, sessions: object) -> dict[str, str]:
    """A chat `long` with 100 long messages on the (emptied) test database; its settings."""
    settings = {"DATABASE_URL": database_url, "LOG_LEVEL": "WARNING"}
    done = await eva(
        tmp_path, "import", str(long_chat(tmp_path / "long.jsonl")), "--chat", "long", **settings
    )
    assert done.code == 0, done.lines
    return settings


@pytest.mark.parametrize("until_idle", [False, True])
async def test_a_rejected_key_ends_compact_with_one_line(
    tmp_path: Path, imported: dict[str, str], until_idle: bool
) -> None:
    async with FakeAnthropic(api_keys={GOOD_KEY}) as fake:
        args = ["compact", "--chat", "long", *(["--until-idle"] if until_idle else [])]
        done = await eva(tmp_path, *args, ANTHROPIC_API_KEY="sk-wrong", ANTHROPIC_BASE_URL=fake.base_url,
                         **imported)  # fmt: skip
        assert fake.requests("compact") == []  # the check came first: no message was sent
    line = one_clear_line(done, 1, "ANTHROPIC_API_KEY")
    assert line.startswith("eva compact: Anthropic rejected ANTHROPIC_API_KEY")


async def test_an_unknown_model_ends_compact_with_one_line(tmp_path: Path, imported: dict[str, str]) -> None:
    async with FakeAnthropic() as fake:
        done = await eva(tmp_path, "compact", "--chat", "long", "--until-idle", ANTHROPIC_API_KEY=GOOD_KEY,
                         ANTHROPIC_BASE_URL=fake.base_url, COMPACT_MODEL="claude-nonesuch-1", **imported)  # fmt: skip
    one_clear_line(done, 1, "COMPACT_MODEL claude-nonesuch-1")


@pytest.mark.parametrize("until_idle", [False, True])
async def test_an_unreachable_host_ends_compact_with_one_line(
    tmp_path: Path, imported: dict[str, str], until_idle: bool
) -> None:
    args = ["compact", "--chat", "long", *(["--until-idle"] if until_idle else [])]
    done = await eva(
        tmp_path, *args, ANTHROPIC_API_KEY=GOOD_KEY, ANTHROPIC_BASE_URL=NOTHING_LISTENS, **imported
    )
    line = one_clear_line(done, 1, "ANTHROPIC_BASE_URL", "127.0.0.1:9")
    assert line.endswith("connection refused")


async def test_a_key_revoked_during_the_run_stops_until_idle(
    tmp_path: Path, imported: dict[str, str]
) -> None:
    """The first request passes (the models lookup), then every message call is refused: the
    watcher of the calls, not the first check, must end the command."""
    async with FakeAnthropic() as fake:
        fake.faults.fail_fraction(1.0, Fault("status", status=401, error_type="authentication_error"),
                                  match="compact")  # fmt: skip
        done = await eva(tmp_path, "compact", "--chat", "long", "--until-idle", ANTHROPIC_API_KEY=GOOD_KEY,
                         ANTHROPIC_BASE_URL=fake.base_url, **imported)  # fmt: skip
        assert fake.requests("compact"), "the calls were sent and refused"
    assert done.code == 1, done.lines
    assert done.seconds < 60
    assert (
        done.lines[-1]
        == "eva compact: Anthropic rejected ANTHROPIC_API_KEY (create a new key in the console)"
    )
    assert "Traceback" not in done.err


async def test_progress_is_plain_lines_without_a_terminal(tmp_path: Path, imported: dict[str, str]) -> None:
    """A compaction and an import, stderr a pipe: no carriage returns; the last line says what
    was done and the rate (the periodic lines: test_plain_lines_come_periodically)."""
    async with FakeAnthropic() as fake:
        done = await eva(tmp_path, "compact", "--chat", "long", "--until-idle", ANTHROPIC_API_KEY=GOOD_KEY,
                         ANTHROPIC_BASE_URL=fake.base_url, **imported)  # fmt: skip
    assert done.code == 0, done.lines
    assert "\r" not in done.err
    bars = [line for line in done.err.splitlines() if line.startswith("compact: lines written by the model")]
    written = int(done.out.split("lines written by the model ")[1].split(",")[0])
    assert written > 0 and f": {written} lines [" in bars[-1] and "lines/s]" in bars[-1], done.err
    again = await eva(
        tmp_path, "import", str(long_chat(tmp_path / "again.jsonl", 7)), "--chat", "again", **imported
    )
    assert again.code == 0 and "\r" not in again.err
    import_bars = [line for line in again.err.splitlines() if line.startswith("import:")]
    assert import_bars[-1].startswith("import: 100%") and "7/7 [" in import_bars[-1], again.err
    assert "messages/s]" in import_bars[-1]
    assert "release plan" not in again.err + done.err  # counts only, never the text


def test_plain_lines_come_periodically() -> None:
    """Without a terminal each redraw is a line of its own, with the count, the rate and the
    time left; tqdm decides when (at most every PLAIN_SECONDS, here every update)."""
    stream = io.StringIO()
    with progress("import", "messages", 4, stream=stream, interval=0) as bar:
        for _ in range(4):
            bar.update(1)
        finished(bar)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and len(lines) >= 5
    assert [line.split("|")[0] for line in lines[:5]] == [f"import: {p:3d}%" for p in (0, 25, 50, 75, 100)]
    assert all(f"{n}/4 [" in line for n, line in zip(range(5), lines, strict=False))
    assert "<" in lines[2] and "messages/s]" in lines[2]  # elapsed<left, and the rate


def test_a_quick_failure_shows_no_progress_line() -> None:
    stream = io.StringIO()
    with pytest.raises(ValueError), progress("import", "messages", 4, stream=stream) as bar:
        bar.update(1)
        raise ValueError("refused")  # within PLAIN_SECONDS: only the command's own line will show
    assert stream.getvalue() == ""


@pytest.mark.parametrize(("make", "expected"), [
    (lambda d: d / "a-file", "is a file, not a folder"),
    (lambda d: d / "a-file" / "data", "cannot be created"),
])  # fmt: skip
async def test_a_bad_data_dir_is_named_with_its_path(tmp_path: Path, make: object, expected: str) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    data_dir = make(tmp_path)  # type: ignore[operator]
    for command in ("stats", "migrate", "import"):
        args = [command, *(["x.jsonl", "--chat", "x"] if command == "import" else [])]
        line = one_clear_line(
            await eva(tmp_path, *args, DATA_DIR=str(data_dir)), 2, "DATA_DIR", str(data_dir)
        )
        assert expected in line


async def test_help_and_version_answer(tmp_path: Path) -> None:
    version = await eva(tmp_path, "--version")
    assert version.code == 0 and version.lines[0].startswith("eva ")
    helped = await eva(tmp_path, "--help")
    assert helped.code == 0 and "--version" in helped.out
    for command in ("compact", "stats"):
        text = (await eva(tmp_path, command, "--help")).out
        assert "free lines:" in " ".join(text.split())
    zoom = (await eva(tmp_path, "zoom", "--help")).out
    assert "+1" in " ".join(zoom.split("--page", 1)[1].split())


async def test_done_keeps_its_lines(tmp_path: Path) -> None:
    # Done.lines is what the assertions above count: blank lines only are left out.
    assert Done(0, "a\n\nb\n", "", 0.0).lines == ["a", "b"]


# --- wipe and forget ask first --------------------------------------------------------------------


async def message_count(tmp_path: Path, settings: dict[str, str], chat: str) -> int:
    done = await eva(tmp_path, "stats", **settings)
    (row,) = [line for line in done.out.splitlines() if line.startswith(f"{chat}\t")]
    return int(row.split("\t")[2])


@pytest.mark.parametrize("command", [["wipe", "--chat", "long"], ["forget", "--user", "42"]])
async def test_an_erasure_without_yes_and_without_a_terminal_refuses(
    tmp_path: Path, imported: dict[str, str], command: list[str]
) -> None:
    line = one_clear_line(await eva(tmp_path, *command, **imported), 2, "--yes")
    assert line.startswith(f"eva {command[0]}: nothing was erased: there is no terminal to ask on")
    assert await message_count(tmp_path, imported, "long") == 100


async def test_a_dry_run_shows_what_would_go_and_keeps_it(tmp_path: Path, imported: dict[str, str]) -> None:
    done = await eva(tmp_path, "wipe", "--chat", "long", "--dry-run", **imported)
    assert done.code == 0, done.lines
    assert done.out.splitlines() == [
        "eva wipe erases chat 'long' (id 1, imported): 100 messages and every memory line; "
        "the chat itself goes too (name included)",
        "dry run: nothing was erased",
    ]
    assert await message_count(tmp_path, imported, "long") == 100


async def answered(tmp_path: Path, settings: dict[str, str], answer: bytes, *args: str) -> Done:
    """`eva` with a terminal (a pty) on stdin that answers ``answer`` to its question."""
    leader, follower = pty.openpty()
    try:
        os.write(leader, answer)
        return await eva(tmp_path, *args, stdin=follower, **settings)
    finally:
        os.close(follower)
        os.close(leader)


async def test_on_a_terminal_wipe_asks_and_only_yes_erases(tmp_path: Path, imported: dict[str, str]) -> None:
    declined = await answered(tmp_path, imported, b"n\n", "wipe", "--chat", "long")
    assert declined.code == 1 and declined.out.splitlines()[-1].endswith("[y/N] nothing was erased"), (
        declined.lines
    )
    assert await message_count(tmp_path, imported, "long") == 100
    agreed = await answered(tmp_path, imported, b"y\n", "wipe", "--chat", "long")
    assert agreed.code == 0 and agreed.out.splitlines()[-1].endswith(
        "[y/N] wiped chat 'long': 100 messages and 0 lines erased"
    )
    assert "long\t" not in (await eva(tmp_path, "stats", **imported)).out


async def test_forget_shows_each_chat_and_says_who_rebuilds_the_lines(
    tmp_path: Path, imported: dict[str, str]
) -> None:
    author_map = tmp_path / "ids.json"
    author_map.write_text(json.dumps({"p0": "4242", "p1": "4343", "p2": "4444"}))
    done = await eva(tmp_path, "import", str(long_chat(tmp_path / "b.jsonl", 9)), "--chat", "b",
                     "--author-ids", str(author_map), **imported)  # fmt: skip
    assert done.code == 0, done.lines
    done = await eva(tmp_path, "forget", "--user", "4242", "--yes", **imported)
    assert done.code == 0, done.lines
    lines = done.out.splitlines()
    assert lines[:2] == ["eva forget erases what user 4242 wrote in every chat:", "  'b': 3 messages"]
    assert "erased 3 messages in 1 chats" in lines[-2]
    assert "running bot's compactor" in lines[-2] and "`eva compact --chat NAME`" in lines[-2]


async def test_stats_without_chats_says_how_to_get_one(
    tmp_path: Path, database_url: str, sessions: object
) -> None:
    done = await eva(tmp_path, "stats", DATABASE_URL=database_url)
    assert done.code == 0, done.lines
    assert done.out.splitlines()[0].startswith("no chats yet: run the bot (`eva run`), or import")


async def test_import_of_a_folder_says_it_is_a_folder(tmp_path: Path, database_url: str) -> None:
    (tmp_path / "exports").mkdir()
    line = one_clear_line(
        await eva(tmp_path, "import", "exports", "--chat", "x", DATABASE_URL=database_url), 2
    )
    assert (
        line
        == "eva import: exports is a folder: give the exported file itself (JSONL, or DiscordChatExporter's JSON)"
    )


async def test_doctor_names_a_bad_data_dir(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    done = await eva(tmp_path, "doctor", DATA_DIR=str(tmp_path / "a-file"))
    assert done.code == 1
    assert (
        f"settings: DATA_DIR {tmp_path / 'a-file'} is a file, not a folder (point DATA_DIR at a folder)"
        in done.lines
    )
