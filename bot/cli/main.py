"""The `eva` command: parse the arguments, then run the command (bot/cli/run.py, the single
error boundary).

Start-up time: this module imports only the parser, so `eva --help`, `eva --version` and a
refused argument answer in about 0.1 s; the command modules (SQLAlchemy, discord.py, the model
client: about 2 s of imports) are imported once a command is known to run (docs/design.md,
imports made late; bench/cli_startup.py measures it)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from typing import Any

from bot.cli.parser import build_parser


def _raise_system_exit(signum: int, _frame: Any) -> None:
    # SIGTERM's default action kills us without running `finally` blocks, which would leave
    # the embedded PostgreSQL running (packages.md); exiting normally stops it.
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _raise_system_exit)
    args = build_parser().parse_args(argv)
    from bot.cli import run  # late: start-up time (see the module docstring)

    return run.execute(args)


if __name__ == "__main__":
    sys.exit(main())
