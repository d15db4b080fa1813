"""Logged exceptions are rendered (JSON and console), as types and frames only: never their
message or locals, which can quote what people wrote. Through the production logging setup:
a library's exception, asyncio's "never retrieved" report, and a failed reply turn in a
SimCord conversation whose exception quotes the message that triggered it."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any
from unittest import mock

import pytest

from bot.log_setup import configure_logging
from bot.log_tracebacks import exception_chain
from tests.hardening.support import CapturedLogs, leaked, production_logs
from tests.worlds.hardening_world import World


def canary() -> str:
    # Built at run time: a frame's source line must not be what carries it into a log.
    return "".join(["tamarind", "-", "gondola", "-", "canary"])


def fail_deep(said: str) -> None:
    """A library-like failure: the text is in a local, in the message and in the cause's message."""
    words = said.split("-")  # a local holding the text
    try:
        raise KeyError(said)
    except KeyError as inner:
        raise ValueError(f"cannot store {words!r}") from inner


@pytest.mark.parametrize("log_format", ["json", "console"])
def test_a_library_exception_is_rendered_without_its_message(log_format: str) -> None:
    saved = logging.getLogger().handlers[:]
    with production_logs("INFO") as logs:  # JSON; restores logging afterwards
        if log_format == "console":
            with mock.patch.object(sys, "stderr", logs.stream):  # as production_logs does
                configure_logging("console", "INFO")
        try:
            fail_deep(canary())
        except ValueError:
            logging.getLogger("discord.client").exception("Ignoring exception in %s", "on_message")
        text = logs.text()
    assert logging.getLogger().handlers == saved
    assert "<traceback object" not in text
    assert not leaked(text, [canary(), "tamarind", "gondola"])
    if log_format == "json":
        (event,) = [e for e in logs.events() if e.get("logger") == "discord.client"]
        assert event["event"] == "Ignoring exception in on_message"
        assert [link["type"] for link in event["exception"]] == ["KeyError", "ValueError"]
        assert event["exception"][-1]["frames"][-1]["function"] == "fail_deep"
    else:  # for people: one line with the chain at INFO
        (line,) = text.strip().splitlines()
        assert "Ignoring exception in on_message" in line and "Traceback" not in line
        assert line.endswith(
            f"exc='KeyError -> ValueError at hardening/test_log_tracebacks.py:{fail_deep_raise_line()}'"
        )


def fail_deep_raise_line() -> int:
    import inspect

    source, first = inspect.getsourcelines(fail_deep)
    return first + next(i for i, line in enumerate(source) if "raise ValueError" in line)


def test_console_at_debug_shows_the_whole_traceback_still_without_messages() -> None:
    with production_logs("INFO") as logs:
        with mock.patch.object(sys, "stderr", logs.stream):
            configure_logging("console", "DEBUG")
        try:
            fail_deep(canary())
        except ValueError:
            logging.getLogger("discord.client").error("Ignoring exception", exc_info=True)
        text = logs.text()
    assert "Traceback (most recent call last):" in text and ", in fail_deep" in text
    assert "KeyError (message not logged)" in text and "ValueError (message not logged)" in text
    assert not leaked(text, [canary(), "tamarind", "gondola"])


def test_the_chain_has_types_and_frames_only() -> None:
    try:
        fail_deep(canary())
    except ValueError as exc:
        chain = exception_chain(exc)
    rendered = json.dumps(chain)
    assert not leaked(rendered, [canary(), "tamarind"])
    assert [set(link) for link in chain] == [{"type", "frames"}] * 2
    assert {frame["function"] for link in chain for frame in link["frames"]} >= {"fail_deep"}


async def test_asyncio_never_retrieved_keeps_only_its_first_line() -> None:
    async def background() -> None:
        fail_deep(canary())

    task = asyncio.get_running_loop().create_task(background())
    await asyncio.sleep(0.01)
    assert task.done()
    with production_logs("INFO") as logs:
        # What Task.__del__ calls for an exception nobody retrieved (asyncio's own formatting).
        asyncio.get_running_loop().call_exception_handler(
            {"message": "Task exception was never retrieved", "exception": task.exception(), "future": task}
        )
    (event,) = [e for e in logs.events() if e.get("logger") == "asyncio"]
    assert event["event"] == "Task exception was never retrieved"
    assert event["exception"][-1]["type"] == "ValueError"
    assert not leaked(logs.text(), [canary(), "tamarind"])


# --- a failed reply turn ---------------------------------------------------------------------------


async def test_a_failed_reply_turn_logs_its_traceback_without_the_message(
    world: World, all_logs: CapturedLogs, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = world
    said = canary()

    async def view_broke(chat_id: int, *args: Any, **kwargs: Any) -> Any:
        raise ValueError(f"cannot render the turn for {said!r}")

    monkeypatch.setattr(w.engine, "prompt_view", view_broke)
    await w.bob.send(w.general, f"{w.me.mention} tell me about the {said}")
    monkeypatch.undo()
    (failed,) = all_logs.named("reply.failed")
    assert failed["error"] == "ValueError"
    (link,) = failed["exception"]
    assert link["type"] == "ValueError"
    functions = [frame["function"] for frame in link["frames"]]
    assert functions[-1] == "view_broke" and {"_answer", "_think"} <= set(functions)  # the turn's frames
    assert w.bot_messages(w.general), "the person still got the short apology"
    assert not leaked(all_logs.text(), [said, "tamarind", "gondola"])
