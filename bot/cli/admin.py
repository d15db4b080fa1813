"""`eva run`, `eva migrate`, `eva doctor`, `eva worker`, `eva health`, `eva dashboard-link`."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import memory
from bot import health
from bot.app import run_bot, run_worker
from bot.cli.doctor import run_checks
from bot.database import open_database
from bot.errors import CliError
from bot.settings import Settings
from bot.settings_checks import persona_problem
from memory import migrate


async def cmd_migrate(_args: argparse.Namespace, settings: Settings) -> int:
    async with open_database(settings) as db:
        await migrate.upgrade(db.engine)
        print(f"database at revision {await migrate.current_revision(db.engine)}")
    return 0


async def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    persona = persona_problem(settings.persona_file)
    if persona is not None:  # before the database and Discord: nothing to undo
        raise CliError(persona)
    for problem in settings.shard_problems():  # before the database and Discord, as the persona
        raise CliError(problem)
    async with open_database(settings) as db:
        await migrate.upgrade(db.engine)
        missing = settings.missing_for_run()
        if missing:
            raise CliError(f"missing required settings: {', '.join(missing)} (see .env.example)")
        await run_bot(settings, db, compact=not args.no_compactor)
    return 0


async def cmd_worker(_args: argparse.Namespace, settings: Settings) -> int:
    """The compactor without the gateway, for a separate process or machine (same database).
    It does not migrate: `eva run` or `eva migrate` owns the schema."""
    if "ANTHROPIC_API_KEY" in settings.missing_for_run():
        raise CliError("missing required settings: ANTHROPIC_API_KEY (see .env.example)")
    async with open_database(settings) as db:
        problems = await _migration_problems(db.engine)
        if problems:
            raise CliError(problems[0])
        await run_worker(settings, db)
    return 0


async def _migration_problems(engine: Any) -> list[str]:
    current, head = await migrate.current_revision(engine), migrate.head_revision()
    if current != head:
        return [f"migrations behind: database at {current or 'none'}, code at {head} (run `eva migrate`)"]
    return []


async def cmd_doctor(_args: argparse.Namespace, settings: Settings) -> int:
    findings = await run_checks(settings)
    for finding in findings:
        print(finding.line())
    sys.stdout.flush()
    return 0 if all(finding.ok for finding in findings) else 1


async def cmd_health(_args: argparse.Namespace, settings: Settings) -> int:
    """0 when healthy (silent, or the process's shards when it holds some); one line and 1
    otherwise (Docker shows it in `docker inspect`)."""
    if settings.health_file is None:
        raise CliError("HEALTH_FILE is not set: `eva run` writes no heartbeat to check")
    beat = health.read(settings.health_file)
    problem = health.verdict(beat, time.time())
    if problem is not None:
        print(problem)
        return 1
    healthy = health.healthy_line(beat)
    if healthy is not None:
        print(healthy)
    return 0


async def cmd_dashboard_link(_args: argparse.Namespace, settings: Settings) -> int:
    """The host's sign-in link (every server; DMs as counts only), valid once for 10 minutes.
    Printed, never logged; the database keeps only its hash, so `eva run` can check it."""
    if settings.dashboard_port is None:
        raise CliError("the dashboard is off: set DASHBOARD_PORT for `eva run` (and here) first")
    async with open_database(settings) as db:
        problems = await _migration_problems(db.engine)
        if problems:
            raise CliError(problems[0])
        engine = memory.build(db.sessions, settings.memory_config())
        secret = await engine.new_dashboard_link(None, None)
    print(f"{settings.dashboard_base()}/signin?t={secret}")
    return 0
