"""Erasing one person from every chat, and the chats where that cannot reach everyone.

`eva forget --user U` without a guild: every guild chat, every DM chat with them (deleted
whole, as /forget-me in DMs does: its name holds their username) and every import that
knows them by id. Imports that know some authors only by name (JSONL without an author-id
map) cannot be searched by id; they are listed so the host can wipe them, never skipped
in silence.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.privacy import erase
from memory.privacy.erase import ErasureReport
from memory.privacy.mention_erasure import person_names
from memory.storage.models import Chat, Message


async def erase_person_everywhere(
    session: AsyncSession,
    author_id: int,
    now: datetime,
    dm_chat_ids: Iterable[int],
    names: Iterable[str] = (),
) -> ErasureReport:
    dms = set(dm_chat_ids)
    # Chats with their messages, and chats where others mention them (their name goes too).
    holding = (
        await session.scalars(
            select(Message.chat_id)
            .where(or_(Message.author_id == author_id, Message.mention_ids.contains([author_id])))
            .distinct()
        )
    ).all()
    # The names they were shown under in their DMs too, read before those chats go.
    known = await person_names(session, sorted(dms), author_id) | set(names)
    report = await erase.delete_chats(session, sorted(dms))
    report.add(await erase.erase_author(session, sorted(set(holding) - dms), author_id, now, known))
    return report


async def chats_known_by_name(session: AsyncSession, guild_id: int | None = None) -> list[str]:
    """Names of chats holding messages whose authors are known only by name. With a guild:
    that guild's such chats and those with no guild (a JSONL import names none)."""
    query = select(Chat.name).where(Chat.authors_by_name).order_by(Chat.name)
    if guild_id is not None:
        query = query.where((Chat.guild_id == guild_id) | Chat.guild_id.is_(None))
    return list((await session.scalars(query)).all())
