"""The row's ceiling after a big erasure, on real chat (acceptance 4 of the erasure issue).

Imports the first 13,714 messages of #ubuntu (ubuntu-stream-1.jsonl) with every eighth message
written by one person (the JSONL names authors by nick only; the person gets an id, as an
author-id map would give), compacts them with the fake summarizer until idle, erases that
person, and prints the `<memory>` block's size before the erasure, right after it (before any
rebuild), what it would have been without the ceiling, and after the compactor rebuilt it.

    .venv/bin/python -m bench.erasure_bound [--messages 13714] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from pathlib import Path

from memory import (
    ChatKey,
    NewMessage,
    build,
    fresh_database,
    make_engine,
    make_sessions,
    migrate,
    read_jsonl,
    row_audit,
)
from memory.config import MemoryConfig
from memory.fakes.summarizer import FakeSummarizer
from memory.tree.render import REBUILDING

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "irc" / "ubuntu-stream-1.jsonl"
PERSON, PERSON_ID = "eighth", 918273645549


def size(lines: list[str]) -> tuple[int, int]:
    return sum(len(line.encode()) + 1 for line in lines), len(lines)


async def run(messages: int, database_url: str) -> None:
    engine = make_engine(database_url)
    await migrate.upgrade(engine)
    sessions = make_sessions(engine)
    config = MemoryConfig()
    memory = build(sessions, config, FakeSummarizer())
    chat = await memory.ensure_chat(ChatKey("imported", "ubuntu"))
    records = list(itertools.islice(read_jsonl(CORPUS), messages))
    batch = [
        NewMessage(r.author_name, r.created_at, r.content, is_bot=r.is_bot)
        if k % 8 != 3
        else NewMessage(PERSON, r.created_at, r.content, author_id=PERSON_ID)
        for k, r in enumerate(records)
    ]
    for start in range(0, len(batch), 1000):
        await memory.append_many(chat, batch[start : start + 1000])
    started = time.perf_counter()
    await memory.compact(chat, until_idle=True, force_swap=True)
    built = time.perf_counter() - started
    before = size((await memory.prompt_view(chat)).row_lines)

    report = await memory.erase_author_everywhere(PERSON_ID)
    started = time.perf_counter()
    view = await memory.prompt_view(chat)
    view_ms = (time.perf_counter() - started) * 1000
    after = size(view.row_lines)
    placeholders = sum(1 for line in view.row_lines if line.endswith(REBUILDING))
    unbounded = size(await row_audit.shown_row_lines(sessions, chat))
    await memory.compact(chat, until_idle=True, force_swap=True)
    rebuilt = size((await memory.prompt_view(chat)).row_lines)
    await engine.dispose()

    print(f"messages imported: {len(records):,}; erased: {report.messages:,} (every eighth)")
    print(f"compaction until idle: {built:.0f} s")
    print(f"<memory> row before the erasure:     {before[0]:>9,} bytes in {before[1]:,} lines")
    print(f"right after, without the ceiling:    {unbounded[0]:>9,} bytes in {unbounded[1]:,} lines")
    print(
        f"right after, as shown:               {after[0]:>9,} bytes in {after[1]:,} lines "
        f"(VIEW_HIGH {config.view_high:,}), {placeholders} 'being rebuilt' lines; view {view_ms:.0f} ms"
    )
    print(f"after the compactor rebuilt it:      {rebuilt[0]:>9,} bytes in {rebuilt[1]:,} lines")


async def main_async(args: argparse.Namespace) -> None:
    url, server = await fresh_database(args.database_url)
    try:
        await run(args.messages, url)
    finally:
        if server is not None:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    description = __doc__.split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="python -m bench.erasure_bound", description=description)
    parser.add_argument("--messages", type=int, default=13_714)
    parser.add_argument("--database-url", help="a server to create the database on (default: embedded)")
    asyncio.run(main_async(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
