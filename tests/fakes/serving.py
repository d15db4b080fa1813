"""A fake as a process of its own (``python -m tests.fakes.anthropic_api`` or ``discord_api``):
the command line and the serve-until-stopped loop both fakes share."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Callable
from typing import Protocol


class Startable(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def listening_arguments(description: str, *, default_port: int, port_help: str) -> argparse.ArgumentParser:
    """--host and --port; a fake adds its own options to what this returns."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=default_port, help=port_help)
    return parser


async def serve_until_stopped(fake: Startable, announce: Callable[[], str]) -> None:
    """Start ``fake``, print ``announce()`` (where it listens: port 0 picks one), serve until
    SIGTERM or SIGINT, then stop it cleanly."""
    await fake.start()
    print(announce(), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows' loop
            loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await fake.stop()
