"""memory/ is the engine: importing all of it must pull in neither discord nor bot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, pkgutil, sys
import memory
names = sorted(m.name for m in pkgutil.walk_packages(memory.__path__, "memory."))
for name in names:
    importlib.import_module(name)
bad = sorted(m for m in sys.modules if m == "discord" or m.startswith("discord.")
             or m == "bot" or m.startswith("bot."))
print(len(names), ",".join(bad))
"""


def test_memory_imports_neither_discord_nor_bot() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    count, _, bad = done.stdout.strip().partition(" ")
    assert int(count) >= 5, done.stdout  # the probe really walked the package
    assert bad == "", f"memory/ imported: {bad}"
