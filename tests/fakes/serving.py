"""A fake as a process of its own (``python -m tests.fakes.anthropic_api`` or ``discord_api``):
the command line and the serve-until-stopped loop both fakes share."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Callable
from typing import Any, Protocol, Self

from aiohttp import web


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


class LocalServer:
    """An aiohttp app served on ``host:port`` (port 0: the OS picks one at start, kept in
    ``port``); ``async with`` starts and stops it. A fake builds its app and calls ``_listen``."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        await self._close()

    async def _listen(self, app: web.Application, **runner_options: Any) -> None:
        runner = web.AppRunner(app, **runner_options)
        await runner.setup()
        await web.TCPSite(runner, self.host, self.port).start()
        self._runner = runner
        self.port = int(runner.addresses[0][1])  # the port the OS picked, when asked for 0

    async def _close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
