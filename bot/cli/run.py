"""Running one parsed `eva` command: the settings, the logs, and the single error boundary.
Whatever ends a command is turned into one line on stderr and an exit code here (the mapping
is bot/cli/errors.py): 2 for bad input, 1 for a service that did not answer (or a bug)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

from bot.cli import admin as cli_admin
from bot.cli import erasure as cli_erasure
from bot.cli import memory_commands as cli_memory
from bot.cli import sync_commands as cli_discord
from bot.cli.errors import explain, unexpected_line
from bot.errors import CliError
from bot.log_setup import configure_logging
from bot.settings import ENV_FILE, Settings
from bot.settings_checks import path_problems
from memory.file_limits import ENV_FILE_BYTES, check_size

Handler = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]


def handlers() -> dict[str, Handler]:
    """Looked up when a command runs (a test may replace one)."""
    return {
        "run": cli_admin.cmd_run,
        "migrate": cli_admin.cmd_migrate,
        "doctor": cli_admin.cmd_doctor,
        "worker": cli_admin.cmd_worker,
        "health": cli_admin.cmd_health,
        "dashboard-link": cli_admin.cmd_dashboard_link,
        "sync-commands": cli_discord.cmd_sync_commands,
        "import": cli_memory.cmd_import,
        "compact": cli_memory.cmd_compact,
        "view": cli_memory.cmd_view,
        "zoom": cli_memory.cmd_zoom,
        "recall": cli_memory.cmd_recall,
        "stats": cli_memory.cmd_stats,
        "forget": cli_erasure.cmd_forget,
        "wipe": cli_erasure.cmd_wipe,
        "export": cli_erasure.cmd_export,
    }


# `eva health` reads a heartbeat file and `eva doctor` reports every problem itself: neither
# needs DATA_DIR to be usable, and doctor must still run to say what is wrong with it.
NO_PATH_CHECK = ("health", "doctor")


def load_settings() -> Settings:
    # pydantic-settings reads the whole .env itself, so its size is checked first.
    check_size(ENV_FILE, ENV_FILE_BYTES, "a settings file", "a .env holds settings only, one per line")
    return Settings()


def execute(args: argparse.Namespace) -> int:
    settings: Settings | None = None
    try:
        settings = load_settings()
        configure_logging(settings.log_format, settings.log_level)
        if args.command not in NO_PATH_CHECK:
            problems = path_problems(
                None if settings.database_url else settings.data_dir, settings.health_file
            )
            if problems:
                raise CliError(problems[0])
        return asyncio.run(handlers()[args.command](args, settings))
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
