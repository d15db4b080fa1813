"""Chats: a channel, thread or DM (or an import) is one chat, found by its Discord id, its
name or our own id, and created with its empty memory row on first sight."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.discord_ids import parse_discord_id
from memory.errors import ChatNotFound
from memory.storage.log import ChatKey
from memory.storage.models import Chat, GuildSettings, MemoryRow


async def ensure_chat(session: AsyncSession, key: ChatKey, timezone: str = "UTC") -> int:
    """The chat's id, created (with its empty memory row) on first sight. A server's own time
    zone (/settings timezone) wins over ``timezone``, the host's."""
    if key.discord_id is not None:
        zone: Any = timezone
        if key.guild_id is not None:
            chosen = select(GuildSettings.timezone).where(GuildSettings.guild_id == key.guild_id)
            zone = func.coalesce(chosen.scalar_subquery(), timezone)
        stmt = (
            insert(Chat)
            .values(
                discord_id=key.discord_id,
                guild_id=key.guild_id,
                parent_id=key.parent_id,
                kind=key.kind,
                name=key.name[:200],
                timezone=zone,
                recipient_id=key.recipient_id,
            )
            .on_conflict_do_update(
                index_elements=[Chat.discord_id],
                set_={
                    "name": key.name[:200],
                    "recipient_id": func.coalesce(Chat.recipient_id, key.recipient_id),
                },
            )
            .returning(Chat.id)
        )
        chat_id = int((await session.execute(stmt)).scalar_one())
    else:
        found = await session.scalar(select(Chat.id).where(Chat.discord_id.is_(None), Chat.name == key.name))
        if found is None:
            found = await session.scalar(
                insert(Chat).values(kind=key.kind, name=key.name[:200], timezone=timezone).returning(Chat.id)
            )
        chat_id = int(found)  # type: ignore[arg-type]
    await session.execute(insert(MemoryRow).values(chat_id=chat_id).on_conflict_do_nothing())
    return chat_id


async def matching_chats(session: AsyncSession, ref: str) -> list[Chat]:
    """Every chat ``ref`` names: by name, by Discord channel id, or by our own id (CLI
    ``--chat``), in id order. An import may share a live channel's name."""
    query = select(Chat).where(Chat.name == ref)
    number = parse_discord_id(ref)
    if number is not None:
        query = select(Chat).where((Chat.discord_id == number) | (Chat.id == number) | (Chat.name == ref))
    return list((await session.scalars(query.order_by(Chat.id))).all())


async def find_chat(session: AsyncSession, ref: str) -> Chat:
    """The one chat ``ref`` names (see :func:`matching_chats`)."""
    chats = await matching_chats(session, ref)
    if not chats:
        raise ChatNotFound(f"no chat named {ref!r} (see `eva stats` for the list of chats)")
    if len(chats) > 1:
        ids = ", ".join(str(chat.id) for chat in chats)
        raise ChatNotFound(f"{len(chats)} chats match {ref!r} (ids {ids}); name one by its id: --chat ID")
    return chats[0]


async def get_chat(session: AsyncSession, chat_id: int) -> Chat:
    chat = await session.get(Chat, chat_id)
    if chat is None:
        raise ChatNotFound(f"no chat with id {chat_id}")
    return chat
