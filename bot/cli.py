"""The `eva` command. Each subcommand is a small async function; errors a person can fix
become one line on stderr and exit code 2 (1 for `doctor` findings)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from pydantic import ValidationError

from bot.errors import CliError
from bot.log_setup import configure_logging
from bot.settings import Settings
from memory.errors import UserFacingError

Handler = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]


def _raise_system_exit(signum: int, _frame: Any) -> None:
    # SIGTERM's default action kills us without running `finally` blocks, which would leave
    # the embedded PostgreSQL running (packages.md); exiting normally stops it.
    raise SystemExit(128 + signum)


def load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']).upper()}: {err['msg']}" for err in exc.errors()
        )
        raise CliError(f"bad settings: {problems}") from None


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    from bot import cli_admin, cli_discord, cli_erasure, cli_memory

    parser = argparse.ArgumentParser(prog="eva", description="Eva, a Discord companion that remembers.")
    subs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    handlers: dict[str, Handler] = {}
    for module in (cli_admin, cli_memory, cli_erasure, cli_discord):
        module.register(subs, handlers)
    return parser, handlers


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _raise_system_exit)
    parser, handlers = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        configure_logging(settings.log_format, settings.log_level)
        return asyncio.run(handlers[args.command](args, settings))
    except UserFacingError as exc:
        print(f"eva {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
