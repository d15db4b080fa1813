"""Memory subcommands: import, compact, view, zoom, recall, stats, forget.

Each reads or changes one chat through the same MemoryEngine the bot uses. Bad input is
one line on stderr and exit code 2, with nothing changed (an import is one transaction).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import memory
from bot.cli.costs import chat_costs, format_costs
from bot.cli.model_check import WatchedSummarizer, check_model
from bot.cli.progress import CountedSummarizer, finished, progress
from bot.commands.status import format_status
from bot.database import open_database
from bot.errors import CliError
from bot.settings import Settings
from memory import (
    AnthropicSummarizer,
    ImportFormatError,
    ImportJob,
    MemoryEngine,
    Summarizer,
    count_messages,
    migrate,
    open_export,
    read_author_map,
)
from memory.claude import make_client
from memory.errors import ChatNotEmpty
from memory.fakes.summarizer import FakeSummarizer


async def _summarizer(settings: Settings, fake: bool) -> Summarizer:
    if fake:
        return FakeSummarizer(node_bytes=settings.node_bytes, tries=settings.tries)
    if settings.anthropic_api_key is None or not settings.anthropic_api_key.get_secret_value():
        raise CliError("ANTHROPIC_API_KEY is not set (or pass --fake-model to use the offline fake)")
    client = make_client(
        settings.anthropic_api_key.get_secret_value(),
        settings.anthropic_base_url,
        settings.anthropic_timeout,
        0,
    )
    await check_model(
        client, settings.compact_model, settings.anthropic_base_url, settings.anthropic_max_retries
    )
    summarizer = AnthropicSummarizer(
        client, model=settings.compact_model, node_bytes=settings.node_bytes, tries=settings.tries
    )
    return WatchedSummarizer(summarizer, settings.compact_model, settings.anthropic_base_url)


@asynccontextmanager
async def _engine(settings: Settings, summarizer: Summarizer | None = None) -> AsyncIterator[MemoryEngine]:
    async with open_database(settings) as db:
        if await migrate.current_revision(db.engine) != migrate.head_revision():
            await migrate.upgrade(db.engine)
        yield memory.build(db.sessions, settings.memory_config(), summarizer, prices=settings.price_table())


async def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    path: Path = args.file
    # One stat in a one-shot CLI command, before any other work: blocking the loop is harmless.
    if os.path.isdir(path):  # noqa: ASYNC240
        raise CliError(
            f"{path} is a folder: give the exported file itself (JSONL, or DiscordChatExporter's JSON)"
        )
    if not os.path.isfile(path):  # noqa: ASYNC240
        raise CliError(f"no such file: {path}")
    try:
        author_ids = getattr(args, "author_ids", None)
        authors = read_author_map(author_ids) if author_ids else {}
        expected = count_messages(path)
        origin, records = open_export(path)
    except (ImportFormatError, OSError) as exc:
        raise CliError(str(exc)) from None
    async with _engine(settings) as engine:
        with progress("import", "messages", expected) as bar:
            try:
                job = ImportJob(origin, records, authors)
                result = await engine.import_export(args.chat, job, lambda done: bar.update(done - bar.n))
            except ChatNotEmpty as exc:
                raise CliError(str(exc)) from None
            except ImportFormatError as exc:
                raise CliError(f"{exc} (nothing was imported)") from None
            bar.update(result.messages - bar.n)
            finished(bar)
    print(f"imported {result.messages} messages into chat {args.chat!r}")
    if records.repeats:
        print(
            f"note: {records.repeats} messages were in the file twice (the same id and the same "
            "message) and were imported once"
        )
    if result.by_name:
        print(
            f"note: some authors of {args.chat!r} are known only by name, so `eva forget --user` cannot "
            "reach their messages; only `eva wipe --chat` erases them (or import again with --author-ids)"
        )
    return 0


async def cmd_compact(args: argparse.Namespace, settings: Settings) -> int:
    summarizer = await _summarizer(settings, args.fake_model)
    # The lines the model writes, counted as they come, with their rate. No total: how many
    # lines need the model is known only once written (the rust corpus: 731 model lines and
    # 6,076 free ones for 3,576 messages; a chat of long messages needs more calls).
    with progress("compact: lines written by the model", "lines", None) as bar:
        async with _engine(settings, CountedSummarizer(summarizer, bar)) as engine:
            chat = await engine.find_chat(args.chat)
            report = await engine.compact(chat.id, until_idle=args.until_idle, force_swap=True)
            finished(bar)
    print(
        f"model calls {report.calls} (failed {report.failed_calls}), lines written by the model "
        f"{report.model_nodes}, free lines {report.free_nodes} (made without a model call), "
        f"swaps {report.swaps} (the memory row replaced by the one just built)"
    )
    return 0


async def cmd_view(args: argparse.Namespace, settings: Settings) -> int:
    async with _engine(settings) as engine:
        chat = await engine.find_chat(args.chat)
        view = await engine.prompt_view(chat.id)
    sys.stdout.write(view.render())
    return 0


async def cmd_zoom(args: argparse.Namespace, settings: Settings) -> int:
    if args.page is not None and args.address.replace(" ", "").partition("+")[2] != "1":
        raise CliError("--page is for one long message (an address ending in +1); a line opens whole")
    if args.page is not None and args.page < 1:
        raise CliError("--page counts from 1")
    async with _engine(settings) as engine:
        chat = await engine.find_chat(args.chat)
        print(await engine.zoom_address(chat.id, args.address, page=args.page or 1))
    return 0


async def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    async with _engine(settings) as engine:
        chat = await engine.find_chat(args.chat)
        print(await engine.recall(chat.id, " ".join(args.words), author=args.author, limit=args.limit))
    return 0


async def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    async with _engine(settings) as engine:
        if args.chat is None:
            print(format_costs(await chat_costs(engine, settings)))
            return 0
        chat = await engine.find_chat(args.chat)
        now = engine.clock.now()
        stats = await engine.chat_stats(chat.id, now)
        usage = await engine.usage_summary(chat.id)
    print(format_status(chat.name, stats, now).replace("**", ""))
    print("All time:")
    for kind, totals in sorted(usage.by_kind.items()):
        print(
            f"{kind}: {totals.calls} calls, input {totals.input_tokens}, cache write "
            f"{totals.cache_write_tokens}, cache read {totals.cache_read_tokens}, "
            f"output {totals.output_tokens} tokens, ${totals.cost_usd:.4f}"
        )
    if not usage.by_kind:
        print("no model calls yet")
    return 0
