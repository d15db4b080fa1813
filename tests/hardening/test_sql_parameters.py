"""SQL parameters never reach a log or a traceback: an import that failed on a huge message
printed other people's messages (the statement's bound values) in its traceback.

Two guarantees: every engine hides parameters, so a failed statement's exception (its text,
its traceback) holds no message text; and importers refuse an oversized message before it
reaches the database, with one line naming where it is.
"""

from __future__ import annotations

import argparse
import json
import traceback
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.cli.memory_commands import cmd_import
from bot.errors import CliError
from bot.settings import Settings
from memory.imports.readers import MAX_MESSAGE_CHARS
from memory.storage.chats import ensure_chat
from memory.storage.database import make_engine, make_sessions
from memory.storage.log import ChatKey, NewMessage, append_many
from memory.storage.models import Message

SECRET = "marmotsecret"  # another person's words, in the same batch as the huge message
AT = datetime(2026, 3, 1, tzinfo=UTC)


async def test_a_failed_statement_carries_no_message_text(database_url: str, sessions: object) -> None:
    engine = make_engine(database_url)
    try:
        async with make_sessions(engine)() as s:
            with pytest.raises(DBAPIError) as failed:
                async with s.begin():
                    chat = await ensure_chat(s, ChatKey("imported", "huge"))
                    batch = [
                        NewMessage("pia", AT, f"{SECRET} see you at eight", author_id=1),
                        # Past PostgreSQL's tsvector limit (1 MB of words): the insert fails.
                        NewMessage("max", AT, " ".join(f"w{k}" for k in range(250_000)), author_id=2),
                    ]
                    await append_many(s, chat, batch)
    finally:
        await engine.dispose()
    shown = "".join(traceback.format_exception(failed.value))
    assert "tsvector" in shown  # the real failure, named
    assert SECRET not in shown and "w1234" not in shown


def huge_jsonl(path: Path, at_line: int) -> Path:
    lines = []
    for k in range(at_line + 5):
        text = "x " * MAX_MESSAGE_CHARS if k == at_line - 1 else f"{SECRET} {k}"
        lines.append(json.dumps({"i": k, "author": "pia", "text": text, "date": AT.isoformat()}))
    path.write_text("\n".join(lines) + "\n")
    return path


async def test_an_oversized_message_is_refused_in_one_line_naming_it(
    tmp_path: Path, database_url: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    settings = Settings(_env_file=None, database_url=database_url)  # type: ignore[call-arg]
    path = huge_jsonl(tmp_path / "log.jsonl", at_line=1234)
    with pytest.raises(CliError) as refused:
        await cmd_import(argparse.Namespace(file=path, chat="big"), settings)
    message = str(refused.value)
    assert message == (
        f"log.jsonl line 1234: the message has {2 * MAX_MESSAGE_CHARS:,} characters, more than the "
        f"{MAX_MESSAGE_CHARS:,} an imported message may have; shorten or remove it (nothing was imported)"
    )
    async with sessions() as s:
        assert await s.scalar(select(func.count()).select_from(Message)) == 0

    # A DiscordChatExporter file names the message by its position.
    dce = tmp_path / "export.json"
    message_of = {"id": "1", "type": "Default", "timestamp": AT.isoformat(), "content": "y" * (MAX_MESSAGE_CHARS + 1),
                  "author": {"id": "2", "name": "max", "nickname": "Max"}}  # fmt: skip
    dce.write_text(json.dumps({"guild": {"id": "0"}, "channel": {"id": "3"}, "messages": [
        {**message_of, "id": "4", "content": SECRET}, message_of]}))  # fmt: skip
    with pytest.raises(CliError) as refused:
        await cmd_import(argparse.Namespace(file=dce, chat="big"), settings)
    assert str(refused.value).startswith("export.json messages[1]: the message has 16,001 characters")
    assert SECRET not in str(refused.value)
