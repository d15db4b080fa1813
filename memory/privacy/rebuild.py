"""What every erasure and edit does once the messages are changed: the lines built from them
are deleted, and the chat's memory row is told, so that the compactor rebuilds them and a call
in flight does not write a line made of the old words."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.storage.models import Chat, MemoryRow
from memory.storage.people_cards import drop_cards
from memory.storage.tree_nodes import delete_covering


async def lock_rows(session: AsyncSession, chat_ids: Iterable[int]) -> dict[int, MemoryRow]:
    """The chats' memory rows, locked first and in chat order, as every erasure and edit takes
    them: two of them never deadlock."""
    locked = await session.scalars(
        select(MemoryRow)
        .where(MemoryRow.chat_id.in_(list(chat_ids)))
        .order_by(MemoryRow.chat_id)
        .with_for_update()
    )
    return {state.chat_id: state for state in locked.all()}


async def drop_lines_over(
    session: AsyncSession, changed: Mapping[int, Sequence[int]], states: Mapping[int, MemoryRow]
) -> int:
    """Delete every line covering the changed messages (their indexes, by chat) and bump each
    chat's row version (a compactor call in flight must not write a line with the old words);
    a row that lost lines needs repair. Returns the lines deleted."""
    lines = 0
    for chat_id, indexes in changed.items():
        total = int(await session.scalar(select(Chat.next_index).where(Chat.id == chat_id)) or 0)
        deleted = await delete_covering(session, chat_id, indexes, max(total, 1).bit_length())
        lines += deleted
        state = states.get(chat_id)
        if state is not None:
            state.version += 1
            if deleted:
                state.needs_repair = True
                state.staged_ready = False
        if deleted:
            await drop_cards(session, [chat_id])  # built from the lines that held the old words
    return lines
