"""`eva doctor`: one line per check, `ok` or the problem, and exit code 1 if any check failed.

Checks: the settings (consistency, persona file, a price for each model); Discord (the token
logs in with GET /users/@me, the application's flags carry the Message Content intent, and
how many servers the bot is in); Anthropic (each configured model is known to the Models API
for this key); the database (it answers, and its migrations). Discord, Anthropic and the
database are checked at the same time, each within CHECK_SECONDS.

A fresh database is not a failure: `eva run` migrates it by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from dataclasses import dataclass

import anthropic
import discord
import discord.http
from alembic.script import ScriptDirectory

from bot.cli.errors import explain
from bot.database import open_database
from bot.settings import Settings
from bot.settings_checks import path_problems, persona_problem
from memory import migrate
from memory.claude import make_client

CHECK_SECONDS = 20.0  # per service; the probes inside are 10-15 s, so a hang still ends here


@dataclass(frozen=True)
class Finding:
    check: str  # "settings" | "discord" | "anthropic" | "database"
    ok: bool
    detail: str

    def line(self) -> str:
        if not self.ok:
            return f"{self.check}: {self.detail}"
        return f"{self.check}: ok ({self.detail})" if self.detail else f"{self.check}: ok"


def _problem(check: str, detail: str) -> Finding:
    return Finding(check, False, detail)


# --- settings -----------------------------------------------------------------------------------


def settings_findings(settings: Settings) -> list[Finding]:
    problems = list(settings.problems())
    problems += path_problems(None if settings.database_url else settings.data_dir, settings.health_file)
    persona = persona_problem(settings.persona_file)
    if persona is not None:
        problems.append(persona)
    prices = settings.price_table()
    for name, model in (("REPLY_MODEL", settings.reply_model), ("COMPACT_MODEL", settings.compact_model)):
        if prices.lookup(model) is None:
            problems.append(f"{name} {model} has no price in PRICES: its calls would count as $0")
    if not problems:
        return [Finding("settings", True, "")]
    return [_problem("settings", p) for p in problems]


# --- Discord --------------------------------------------------------------------------------------


def intent_state(flags: discord.ApplicationFlags) -> bool:
    """The Message Content intent is on: verified apps have GATEWAY_MESSAGE_CONTENT (1 << 18),
    apps under 100 servers that toggled it in the portal GATEWAY_MESSAGE_CONTENT_LIMITED (1 << 19)."""
    return bool(flags.gateway_message_content or flags.gateway_message_content_limited)


async def discord_finding(settings: Settings) -> Finding:
    token = settings.discord_token.get_secret_value() if settings.discord_token else ""
    if not token:
        return _problem("discord", "DISCORD_TOKEN is not set")
    previous = discord.http.Route.BASE
    discord.http.Route.BASE = settings.discord_api_base.rstrip("/")  # a local fake in tests
    discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False  # text only: noise
    client = discord.Client(intents=discord.Intents(guilds=True))  # never connects; quiets a warning
    try:
        # login() is GET /users/@me (401 -> LoginFailure) then GET /oauth2/applications/@me.
        await client.login(token)
        app = client.application or await client.application_info()
    except Exception as exc:
        failure = explain(exc, settings)
        if failure is None:
            raise
        return _problem("discord", failure.line)
    finally:
        discord.http.Route.BASE = previous
        with contextlib.suppress(Exception):
            await client.close()
    user = client.user
    name = str(user) if user is not None else "the bot"
    servers = app.approximate_guild_count
    where = f"in {servers} server{'s' if servers != 1 else ''}" if servers else "in no server yet (invite it)"
    if not intent_state(app.flags):
        return _problem(
            "discord",
            f"{name}: the Message Content intent is off; enable it under Bot > Privileged Gateway "
            "Intents in the Developer Portal (without it the bot cannot read messages)",
        )
    return Finding("discord", True, f"logged in as {name}, Message Content intent on, {where}")


# --- Anthropic -------------------------------------------------------------------------------------


async def anthropic_findings(settings: Settings) -> list[Finding]:
    key = settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else ""
    if not key:
        return [_problem("anthropic", "ANTHROPIC_API_KEY is not set")]
    client = make_client(key, settings.anthropic_base_url, timeout=15.0, max_retries=0)
    models: dict[str, list[str]] = {}
    for name, model in (("REPLY_MODEL", settings.reply_model), ("COMPACT_MODEL", settings.compact_model)):
        models.setdefault(model, []).append(name)
    findings = []
    try:
        for model, names in models.items():
            setting = " and ".join(names)
            try:
                info = await client.models.retrieve(model)
            except anthropic.NotFoundError:
                findings.append(_problem("anthropic", f"{setting} {model} is not a model the API knows"))
                continue
            except anthropic.PermissionDeniedError:
                findings.append(_problem("anthropic", f"ANTHROPIC_API_KEY may not use {setting} {model}"))
                continue
            except Exception as exc:
                failure = explain(exc, settings)
                if failure is None:
                    raise
                return [_problem("anthropic", failure.line)]  # the key or the network: once is enough
            lifecycle = getattr(info, "lifecycle", "active")
            if lifecycle == "retired":
                findings.append(_problem("anthropic", f"{setting} {model} is retired: pick a current model"))
            elif lifecycle == "deprecated":
                findings.append(Finding("anthropic", True, f"{setting} {model} answers, but is deprecated"))
            else:
                findings.append(Finding("anthropic", True, f"{setting} {model} available"))
    finally:
        await client.close()
    return findings


# --- database --------------------------------------------------------------------------------------


def known_revisions() -> set[str]:
    scripts = ScriptDirectory.from_config(migrate.alembic_config())
    return {script.revision for script in scripts.walk_revisions()}


def migration_finding(current: str | None, head: str | None, known: set[str]) -> Finding:
    """A pure verdict on the database's revision against the code's."""
    if current == head:
        return Finding("database", True, f"migrations current at {head}")
    if current is None:
        return Finding("database", True, "not migrated yet: `eva run` will migrate")
    if current not in known:
        return _problem(
            "database",
            f"at revision {current}, which this version of Eva does not know (was it run by a newer one?)",
        )
    return _problem(
        "database", f"migrations behind: database at {current}, code at {head} (`eva run` or `eva migrate`)"
    )


async def database_finding(settings: Settings) -> Finding:
    try:
        async with open_database(settings) as db:
            current = await migrate.current_revision(db.engine)
    except Exception as exc:
        failure = explain(exc, settings)
        reason = failure.line if failure else f"the embedded database did not start ({type(exc).__name__})"
        return _problem("database", reason)
    return migration_finding(current, migrate.head_revision(), known_revisions())


# --- all ---------------------------------------------------------------------------------------------


async def _within(check: str, work: Awaitable[Finding | list[Finding]]) -> list[Finding]:
    try:
        async with asyncio.timeout(CHECK_SECONDS):
            found = await work
    except TimeoutError:
        return [_problem(check, f"no answer within {CHECK_SECONDS:.0f} s")]
    return found if isinstance(found, list) else [found]


async def run_checks(settings: Settings) -> list[Finding]:
    groups = await asyncio.gather(
        _within("discord", discord_finding(settings)),
        _within("anthropic", anthropic_findings(settings)),
        _within("database", database_finding(settings)),
    )
    return settings_findings(settings) + [finding for group in groups for finding in group]
