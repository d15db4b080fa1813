"""The `eva` command. Each subcommand is a small async function; whatever ends one is turned
into one line on stderr and an exit code in `main`, the single error boundary (the mapping is
bot/cli/errors.py): 2 for bad input, 1 for a service that did not answer (or a bug)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import structlog

from bot.cli import admin as cli_admin
from bot.cli import erasure as cli_erasure
from bot.cli import memory_commands as cli_memory
from bot.cli import sync_commands as cli_discord
from bot.cli.args import OneLineParser
from bot.cli.errors import explain, unexpected_line
from bot.log_setup import configure_logging
from bot.settings import ENV_FILE, Settings
from memory.file_limits import ENV_FILE_BYTES, check_size

Handler = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]


def _raise_system_exit(signum: int, _frame: Any) -> None:
    # SIGTERM's default action kills us without running `finally` blocks, which would leave
    # the embedded PostgreSQL running (packages.md); exiting normally stops it.
    raise SystemExit(128 + signum)


def load_settings() -> Settings:
    # pydantic-settings reads the whole .env itself, so its size is checked first.
    check_size(ENV_FILE, ENV_FILE_BYTES, "a settings file", "a .env holds settings only, one per line")
    return Settings()


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    parser = OneLineParser(prog="eva", description="Eva, a Discord companion that remembers.")
    subs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    handlers: dict[str, Handler] = {}
    for module in (cli_admin, cli_memory, cli_erasure, cli_discord):
        module.register(subs, handlers)
    return parser, handlers


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _raise_system_exit)
    parser, handlers = build_parser()
    args = parser.parse_args(argv)
    settings: Settings | None = None
    try:
        settings = load_settings()
        configure_logging(settings.log_format, settings.log_level)
        return asyncio.run(handlers[args.command](args, settings))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        failure = explain(exc, settings)
        if settings is not None:
            # Shown only at LOG_LEVEL=DEBUG; rendered without the exception's message or locals.
            structlog.get_logger(__name__).debug("cli.failed", command=args.command, exc_info=exc)
        line, code = (failure.line, failure.exit_code) if failure else (unexpected_line(exc), 1)
        print(f"eva {args.command}: {line}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
