"""`eva run`, `eva migrate`, `eva doctor`, `eva worker`, `eva sync-commands`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from sqlalchemy import text

from bot.database_runtime import open_database
from bot.errors import CliError
from bot.settings import Settings
from bot.settings_checks import persona_problem
from memory import migrate
from memory.database import make_engine


def register(subs: Any, handlers: dict[str, Any]) -> None:
    subs.add_parser("run", help="migrate the database, then run the bot")
    subs.add_parser("migrate", help="apply database migrations")
    subs.add_parser("doctor", help="check settings, database and migrations")
    subs.add_parser("worker", help="run only the background compactor (no Discord connection)")
    handlers.update(run=cmd_run, migrate=cmd_migrate, doctor=cmd_doctor, worker=cmd_worker)


async def cmd_migrate(_args: argparse.Namespace, settings: Settings) -> int:
    async with open_database(settings) as db:
        await migrate.upgrade(db.engine)
        print(f"database at revision {await migrate.current_revision(db.engine)}")
    return 0


async def cmd_run(_args: argparse.Namespace, settings: Settings) -> int:
    persona = persona_problem(settings.persona_file)
    if persona is not None:  # before the database and Discord: nothing to undo
        raise CliError(persona)
    async with open_database(settings) as db:
        await migrate.upgrade(db.engine)
        missing = settings.missing_for_run()
        if missing:
            raise CliError(f"missing required settings: {', '.join(missing)} (see .env.example)")
        from bot.app import run_bot

        await run_bot(settings, db)
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
        from bot.app import run_worker

        await run_worker(settings, db)
    return 0


async def _database_problems(settings: Settings) -> list[str]:
    """Reachability and migration state, one sentence per problem."""
    url = settings.database_url.get_secret_value() if settings.database_url else ""
    if not url:
        try:
            async with open_database(settings) as db:
                return await _migration_problems(db.engine)
        except Exception as exc:  # the embedded server failed to start: say why, in one line
            return [f"embedded database did not start: {type(exc).__name__}: {str(exc)[:200]}"]
    engine = make_engine(url)
    try:
        async with asyncio.timeout(10):
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        return await _migration_problems(engine)
    except (TimeoutError, OSError, Exception) as exc:
        reason = type(exc).__name__
        return [f"database unreachable at DATABASE_URL ({reason})"]
    finally:
        await engine.dispose()


async def _migration_problems(engine: Any) -> list[str]:
    current, head = await migrate.current_revision(engine), migrate.head_revision()
    if current != head:
        return [f"migrations behind: database at {current or 'none'}, code at {head} (run `eva migrate`)"]
    return []


async def cmd_doctor(_args: argparse.Namespace, settings: Settings) -> int:
    problems = [f"{name} is not set" for name in settings.missing_for_run()]
    problems += settings.problems()
    if settings.persona_file is not None and not settings.persona_file.is_file():
        problems.append(f"PERSONA_FILE {settings.persona_file} is not a readable file")
    problems += await _database_problems(settings)
    for problem in problems:
        print(problem)
    if not problems:
        print("ok")
    sys.stdout.flush()
    return 1 if problems else 0
