"""Running the real `eva` as a subprocess (`python -m bot.cli`), asynchronously so that fakes
served by the test's own event loop keep answering while it runs."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROCESS_SECONDS = 90.0  # a hung command fails the test instead of the run
# Everything a setting could come from; a test sets what it needs.
SETTING_PREFIXES = (
    "DATABASE_",
    "DISCORD_",
    "ANTHROPIC_",
    "PRICES",
    "PERSONA_",
    "LOG_",
    "HEALTH_",
    "DATA_DIR",
)


@dataclass
class Done:
    code: int
    out: str
    err: str
    seconds: float

    @property
    def lines(self) -> list[str]:
        return [line for line in (self.out + self.err).splitlines() if line.strip()]


async def eva(
    cwd: Path, *args: str | bytes, stdin: int = asyncio.subprocess.DEVNULL, **settings: str
) -> Done:
    """``stdin``: no terminal unless a test passes one (a pty), whatever runs pytest."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(SETTING_PREFIXES)}
    env.update({"PYTHONPATH": str(REPO), "DATA_DIR": str(cwd / "data")} | settings)  # a test may set DATA_DIR
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", *args, cwd=cwd, env=env, stdin=stdin,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        async with asyncio.timeout(PROCESS_SECONDS):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
    assert proc.returncode is not None
    return Done(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                time.monotonic() - started)  # fmt: skip
