"""``python -m bench.dashboard_page``: the dashboard's memory page of the scale chat against the
reply prompt's read of the same chat (docs/benchmarks.md, the dashboard).

The chat is bench/scale_measure.py's (a corpus repeated to ``--messages`` messages, its tree
and row simulated as the compactor builds them). The dashboard (bot/dashboard/web.py) serves
it on 127.0.0.1 from this process, signed in with a real one-time link; the membership check is
answered yes (no Discord here), everything else is the production path: the guard, the chat's
check, ``MemoryEngine.prompt_view``, the HTML and the socket. For each sample, one
``prompt_view`` and one GET of the memory page, interleaved so that both see the same cache
and load; then one zoom of a random row line (what a click loads). The acceptance: the page's
p95 within ``prompt_view``'s p95 plus 50 ms.

    python -m bench.dashboard_page --messages 1000000 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import discord

from bench.logs import configure_logging
from bench.scale_measure import GUILD_ID, ScaleFigures, ScaleSpec, build_chat, latency
from bot.dashboard.web import SERVER_COOKIE, Dashboard, bound_port, serve
from bot.services import Services
from bot.settings import Settings
from memory import BulkDatabase, EmbeddedPostgres, MemoryEngine, create_run_database, drop_database
from memory.claude import make_client
from memory.tree.node import address

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "irc"
CORPUS = "ubuntu-stream-1.jsonl"
BUDGET_MS = 50.0  # the page may take prompt_view's p95 plus this much
ADMIN_ID = 1
WARM_UP = 3  # untimed rounds before the samples


def dashboard_services(memory: MemoryEngine) -> Services:
    """What the dashboard reads: the engine and the settings (the client is never called)."""
    settings = Settings(_env_file=None, dashboard_port=0)  # type: ignore[call-arg]
    claude = make_client("unused", None, 1.0, 0)
    return Services(settings, memory, claude, settings.price_table(), memory.clock)


async def measure(spec: ScaleSpec, url: str) -> dict[str, Any]:
    database = await BulkDatabase.open(url)
    memory = MemoryEngine(database.sessions, spec.config)
    figures = ScaleFigures(messages=spec.messages, corpus=spec.corpus.name)
    discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False  # text only, as EvaBot
    client = discord.Client(intents=discord.Intents(guilds=True))  # never connected: names are ids
    try:
        chat_id, sim, _records = await build_chat(spec, database, memory, figures)
        services = dashboard_services(memory)
        runner = await serve(
            Dashboard(services, client, lambda _g, _u: True, lambda _g, _u, _c: True).app(), "127.0.0.1", 0
        )
        try:
            base = f"http://127.0.0.1:{bound_port(runner)}"
            return await _timed_pages(spec, memory, base, chat_id, [address(p) for p in sim.row], figures)
        finally:
            await runner.cleanup()
            await services.claude.close()
    finally:
        await database.close()


async def _timed_pages(
    spec: ScaleSpec, memory: MemoryEngine, base: str, chat_id: int, row: list[str], figures: ScaleFigures
) -> dict[str, Any]:
    rng = random.Random(spec.seed)
    secret = await memory.new_dashboard_link(GUILD_ID, ADMIN_ID)
    page = f"{base}/g/{GUILD_ID}/chat/{chat_id}"
    views, pages, zooms = [], [], []
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{base}/signin", data={"t": secret}, allow_redirects=False) as signed:
            cookies = {SERVER_COOKIE: signed.cookies[SERVER_COOKIE].value}
        size = 0
        for _ in range(WARM_UP):  # the first requests pay for connections and first-use setup
            await memory.prompt_view(chat_id)
            async with http.get(page, cookies=cookies) as answer:
                await answer.read()
        for _ in range(spec.samples):
            started = time.perf_counter()
            view = await memory.prompt_view(chat_id)
            views.append(time.perf_counter() - started)
            started = time.perf_counter()
            async with http.get(page, cookies=cookies) as answer:
                body = await answer.read()
                assert answer.status == 200, answer.status
            pages.append(time.perf_counter() - started)
            size = len(body)
            started = time.perf_counter()
            at = rng.choice(row) if row else "0+1"
            async with http.get(f"{page}/zoom", params={"at": at}, cookies=cookies) as answer:
                await answer.read()
            zooms.append(time.perf_counter() - started)
    view_lat, page_lat, zoom_lat = latency(views), latency(pages), latency(zooms)
    return {
        "messages": spec.messages,
        "samples": spec.samples,
        "prompt_view_p95_ms": view_lat.p95_ms,
        "memory_page_p95_ms": page_lat.p95_ms,
        "over_prompt_view_ms": round(page_lat.p95_ms - view_lat.p95_ms, 2),
        "within_budget": page_lat.p95_ms <= view_lat.p95_ms + BUDGET_MS,
        "zoom_click_p95_ms": zoom_lat.p95_ms,
        "detail": {
            "prompt_view_ms": vars(view_lat),
            "memory_page_ms": vars(page_lat),
            "zoom_click_ms": vars(zoom_lat),
            "page_bytes": size,
            "row_lines": len(view.row_lines),
            "tail_lines": len(view.tail_lines),
            "load_seconds": figures.load_seconds,
            "corpus": spec.corpus.name,
        },
    }


async def run(spec: ScaleSpec, admin_url: str | None) -> dict[str, Any]:
    server = None
    if admin_url is None:
        server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="eva-dash-")), delete_on_stop=True)
        server.start(database="postgres")
        admin_url = server.admin_url()
    name = f"eva_dash_{int(time.time() * 1000)}"
    try:
        url = await create_run_database(admin_url, name)
        try:
            return await measure(spec, url)
        finally:
            await drop_database(admin_url, name)
    finally:
        if server is not None:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.dashboard_page", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--corpus", type=Path, default=DATA / CORPUS)
    parser.add_argument("--database-url", help="a PostgreSQL server to create the benchmark database on")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    configure_logging()
    if not args.corpus.is_file():
        print(f"no corpus at {args.corpus}: pass --corpus", file=sys.stderr)
        return 2
    if args.messages < 1 or args.samples < 1:
        print("--messages and --samples must be at least 1", file=sys.stderr)
        return 2
    spec = ScaleSpec(args.corpus, messages=args.messages, samples=args.samples, erase=0)
    result = asyncio.run(run(spec, args.database_url))
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            if key != "detail":
                print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
