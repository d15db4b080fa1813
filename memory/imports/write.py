"""Writing a parsed export (memory/imports/readers.py) into an empty chat, inside the caller's
transaction: all of it or, on a bad record, none of it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from memory.imports.fields import ImportFormatError
from memory.storage.log import NewMessage, append_many, from_import
from memory.storage.models import Chat
from memory.text.records import ExportOrigin, ImportedMessage

IMPORT_BATCH = 1000  # messages per multi-row insert; ~0.2 MB of text


@dataclass(frozen=True, slots=True)
class ImportJob:
    origin: ExportOrigin  # the guild and channel the export names (guild erasure finds it by them)
    records: Iterable[ImportedMessage]
    authors: Mapping[str, int]  # ids for authors the export names only by name


@dataclass(frozen=True, slots=True)
class ImportResult:
    messages: int  # written: every record of the job
    by_name: bool  # some authors are known only by name: `forget --user` cannot reach them


async def write_import(
    session: AsyncSession, chat_id: int, job: ImportJob, progress: Callable[[int], None]
) -> ImportResult:
    """``progress`` gets the count written after every batch. Every record is written, or the
    import fails (ImportFormatError) and the caller's transaction writes nothing: a record whose
    snowflake is already logged would be skipped by the log, and every later reply would point
    one message too far (the readers refuse such files first, naming both messages)."""
    authors = job.authors
    index_of: dict[str, int] = {}
    batch: list[NewMessage] = []
    done, by_name = 0, False
    for record in job.records:
        if record.author_id is None and record.author_name in authors:
            record = replace(record, author_id=authors[record.author_name])
        by_name = by_name or (record.author_id is None and not record.is_bot)
        reply = index_of.get(record.reply_to_source) if record.reply_to_source else None
        batch.append(from_import(record, reply))
        # The index a message gets is the count before it (all are written, checked in
        # _write), so replies inside one batch are resolved before it is written.
        if record.source_id is not None:
            index_of[record.source_id] = done + len(batch) - 1
        if len(batch) >= IMPORT_BATCH:
            done += await _write(session, chat_id, batch)
            batch = []
            progress(done)
    done += await _write(session, chat_id, batch)
    # Who and where: guild erasure and `eva forget --user` find the chat by these.
    await session.execute(
        update(Chat)
        .where(Chat.id == chat_id)
        .values(
            guild_id=job.origin.guild_id, source_channel_id=job.origin.channel_id, authors_by_name=by_name
        )
    )
    return ImportResult(done, by_name)


async def _write(session: AsyncSession, chat_id: int, batch: list[NewMessage]) -> int:
    if not batch:
        return 0
    assigned = await append_many(session, chat_id, batch)
    skipped = [message.snowflake for message, index in zip(batch, assigned, strict=True) if index is None]
    if skipped:
        raise ImportFormatError(
            f"message id {skipped[0]} is in the export twice; keep one of the two and import again"
        )
    return len(batch)
