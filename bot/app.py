"""Composition root of the bot process: everything is built once, here, and passed
down; nothing else reads settings from the environment or builds a client.

Built in this order and released in the reverse one: database (by the caller, `open_database`),
Claude client, summarizer + compactor, memory engine, scheduler, bot (gateway).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from typing import Any

import discord
import discord.gateway
import discord.http
import structlog
import yarl
from aiohttp import web

import memory
from bot.client import DEFAULT_GUILD_READY_TIMEOUT, EvaBot, ShardedEvaBot
from bot.dashboard.web import Dashboard, metrics_app, serve
from bot.database import keep_embedded_running
from bot.errors import CliError
from bot.health import beat_forever
from bot.scheduler import CompactionScheduler
from bot.services import Services
from bot.settings import DISCORD_API_BASE, DISCORD_GATEWAY_URL, Settings
from memory import AnthropicSummarizer, Clock, Database, Summarizer, WallClock
from memory.claude import make_client

log = structlog.get_logger(__name__)

# Against a local fake (or a gateway proxy) every guild arrives at once after READY; Discord
# itself can take a moment per guild, hence discord.py's 2 s there. A guild later than this
# is backfilled by on_guild_available.
REPOINTED_GUILD_READY_TIMEOUT = 0.2
RUNNER_EXIT_SECONDS = 10.0  # bot.start() returns quickly once close() has run


def point_discord(settings: Settings) -> bool:
    """Repoint discord.py's REST base and gateway (DISCORD_API_BASE, DISCORD_GATEWAY_URL)
    when they differ from Discord's own; True when anything was repointed."""
    repointed = False
    if settings.discord_api_base.rstrip("/") != DISCORD_API_BASE:
        discord.http.Route.BASE = settings.discord_api_base.rstrip("/")
        repointed = True
    if settings.discord_gateway_url != DISCORD_GATEWAY_URL:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.discord_gateway_url)
        repointed = True
    return repointed


def build_services(
    settings: Settings,
    db: Database,
    *,
    clock: Clock | None = None,
    summarizer: Summarizer | None = None,
    compact: bool = True,
) -> Services:
    """Claude client, compactor, engine and scheduler on an open database (bot, worker, tests).
    Tests pass their own ``clock`` and ``summarizer`` (the deterministic FakeSummarizer);
    ``compact`` False: the scheduler ticks without compacting (`eva run --no-compactor`)."""
    api_key = settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else ""
    # Replies use the SDK's own retries; the summarizer derives a copy without them.
    claude = make_client(
        api_key, settings.anthropic_base_url, settings.anthropic_timeout, settings.anthropic_max_retries
    )
    clock = clock or WallClock()
    config, prices = settings.memory_config(), settings.price_table()
    summarizer = summarizer or AnthropicSummarizer(
        claude, model=settings.compact_model, node_bytes=settings.node_bytes, tries=settings.tries
    )
    engine = memory.build(db.sessions, config, summarizer, clock=clock, prices=prices)
    return Services(
        settings=settings,
        engine=engine,
        claude=claude,
        prices=prices,
        clock=clock,
        scheduler=CompactionScheduler(engine, compact=compact),
    )


@contextlib.asynccontextmanager
async def stop_signals() -> AsyncIterator[asyncio.Event]:
    """An event set by SIGTERM or SIGINT for the duration; the previous handlers (the CLI's,
    which exits through `finally` blocks) come back afterwards."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    previous: dict[signal.Signals, Any] = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.getsignal(signum)
        loop.add_signal_handler(signum, stop.set)
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            loop.remove_signal_handler(signum)
            signal.signal(signum, handler)


async def run_bot(settings: Settings, db: Database, *, compact: bool = True) -> None:
    """Run the bot until SIGTERM/SIGINT or a fatal gateway error, then close everything.
    ``compact`` False (`eva run --no-compactor`): `eva worker` processes build the memory; the
    scheduler here only VACUUMs after this process's erasures."""
    repointed = point_discord(settings)
    services = build_services(settings, db, compact=compact)
    ready_timeout = REPOINTED_GUILD_READY_TIMEOUT if repointed else DEFAULT_GUILD_READY_TIMEOUT
    shard_count, shard_ids = settings.shard_plan()
    bot = (
        EvaBot(services, guild_ready_timeout=ready_timeout)
        if shard_count is None
        else ShardedEvaBot(
            services,
            guild_ready_timeout=ready_timeout,
            shard_count=shard_count,
            shard_ids=list(shard_ids) if shard_ids is not None else None,
        )
    )
    token = settings.discord_token.get_secret_value() if settings.discord_token else ""
    async with stop_signals() as stop:
        assert services.scheduler is not None
        services.scheduler.start()
        runner = asyncio.create_task(bot.start(token), name="discord")
        heartbeat = _start_heartbeat(settings, bot, services.engine)
        web_runners = await start_web(services, bot)
        database_watch = asyncio.create_task(keep_embedded_running(db), name="embedded-postgres")
        stopper = asyncio.create_task(stop.wait(), name="stop-signal")
        try:
            await asyncio.wait({runner, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if runner.done():
                _raise_start_error(runner)
            else:
                log.info("bot.stopping")
        finally:
            stopper.cancel()
            database_watch.cancel()
            if heartbeat is not None:
                heartbeat.cancel()
            for web_runner in web_runners:
                await web_runner.cleanup()
            await bot.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(runner, RUNNER_EXIT_SECONDS)
    log.info("bot.stopped")


async def start_web(services: Services, bot: discord.Client) -> list[web.AppRunner]:
    """The dashboard (DASHBOARD_PORT, /metrics included) and /metrics alone (METRICS_PORT)."""
    settings, runners = services.settings, []
    try:
        if settings.dashboard_port is not None:
            app = Dashboard(services, bot).app()
            runners.append(await serve(app, settings.dashboard_host, settings.dashboard_port))
            log.info("dashboard.started", host=settings.dashboard_host, port=settings.dashboard_port)
        if settings.metrics_port is not None:
            runners.append(await serve(metrics_app(services), settings.dashboard_host, settings.metrics_port))
            log.info("metrics.started", host=settings.dashboard_host, port=settings.metrics_port)
    except OSError as exc:
        for started in runners:
            await started.cleanup()
        raise CliError(
            f"cannot listen on {settings.dashboard_host} for the dashboard or /metrics ({exc.strerror});"
            " change DASHBOARD_PORT, METRICS_PORT or DASHBOARD_HOST"
        ) from None
    return runners


def _start_heartbeat(settings: Settings, bot: Any, engine: memory.MemoryEngine) -> asyncio.Task[None] | None:
    """The heartbeat file `eva health` reads (bot/health.py), when HEALTH_FILE is set."""
    if settings.health_file is None:
        return None
    return asyncio.create_task(
        beat_forever(bot, engine, settings.health_file, settings.health_interval), name="heartbeat"
    )


def _raise_start_error(runner: asyncio.Task[None]) -> None:
    exc = runner.exception()
    if isinstance(exc, discord.LoginFailure):
        raise CliError("Discord rejected DISCORD_TOKEN (reset the token in the Developer Portal)") from None
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        raise CliError(
            "Discord refused the Message Content intent (and Server Members, which DASHBOARD_PORT"
            " needs): enable them under Bot > Privileged Gateway Intents in the Developer Portal"
        ) from None
    if exc is not None:
        raise exc


async def run_worker(settings: Settings, db: Database) -> None:
    """`eva worker`: the compaction scheduler alone, until SIGTERM/SIGINT."""
    services = build_services(settings, db)
    scheduler = services.scheduler
    assert scheduler is not None
    async with stop_signals() as stop:
        scheduler.start()
        database_watch = asyncio.create_task(keep_embedded_running(db), name="embedded-postgres")
        log.info("worker.started", interval=scheduler.interval)
        try:
            await stop.wait()
        finally:
            database_watch.cancel()
            await scheduler.stop()
            with contextlib.suppress(Exception):
                await services.claude.close()
    log.info("worker.stopped")
