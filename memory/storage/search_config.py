"""Each chat's text search configuration (recall's stemming and accent folding): chosen once
the chat has GUESS_AT messages, from its server's setting or guessed from its words
(memory/text/language.py), and every row of the chat re-indexed with it.

Until then a chat is read and written as eva_simple (words as typed, accents folded); the
rows written before the choice are at most GUESS_AT plus one batch, so re-indexing them costs
one small UPDATE. A server's new setting re-indexes its chats whole (set_guild_language).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, cast, literal, select, update
from sqlalchemy.dialects.postgresql import REGCONFIG
from sqlalchemy.ext.asyncio import AsyncSession

from memory.storage.models import Chat, GuildSettings, Message
from memory.text.language import SIMPLE, config_for, guess_language

# ~100 chat messages hold 500-1,000 words: enough for the guess (MIN_WORDS = 200).
GUESS_AT = 100
GUESS_SAMPLE = 400  # the newest messages read for the guess


def _regconfig(name: str) -> ColumnElement[str]:
    return cast(literal(name), REGCONFIG)


def undecided(config: str | None, total: int) -> bool:
    """True when the chat has no configuration yet and now has enough messages to choose one."""
    return config is None and total >= GUESS_AT


async def choose(
    session: AsyncSession, chat_id: int, guild_id: int | None, total: int, fresh: Sequence[str] = ()
) -> str:
    """Choose and store the chat's configuration (the chat row is locked by the caller) and
    re-index its first ``total`` messages with it; ``fresh``: texts not inserted yet."""
    language = None
    if guild_id is not None:
        language = await session.scalar(
            select(GuildSettings.search_language).where(GuildSettings.guild_id == guild_id)
        )
    if language is None:
        earlier = await session.scalars(
            select(Message.text)
            .where(Message.chat_id == chat_id, Message.idx < total, Message.text.is_not(None))
            .order_by(Message.idx.desc())
            .limit(GUESS_SAMPLE)
        )
        language = guess_language([*fresh, *(t for t in earlier.all() if t)])
    config = config_for(language)
    await session.execute(update(Chat).where(Chat.id == chat_id).values(search_config=config))
    await session.execute(
        update(Message)
        .where(Message.chat_id == chat_id, Message.idx < total, Message.search_config != _regconfig(config))
        .values(search_config=config)
    )
    return config


async def set_guild_language(session: AsyncSession, guild_id: int, language: str | None) -> None:
    """A server's choice (None: guess again) for every chat of the server, re-indexed now.
    A 1M-message chat takes minutes: the rows' words and their GIN entries are written again.
    The caller has stored the setting in this transaction (``choose`` reads it)."""
    chats = (
        await session.execute(
            select(Chat.id, Chat.next_index).where(Chat.guild_id == guild_id).with_for_update()
        )
    ).all()
    for chat_id, total in chats:
        if language is None and total < GUESS_AT:
            await session.execute(update(Chat).where(Chat.id == chat_id).values(search_config=None))
            await session.execute(
                update(Message)
                .where(Message.chat_id == chat_id, Message.search_config != _regconfig(SIMPLE))
                .values(search_config=SIMPLE)
            )
        else:
            await choose(session, chat_id, guild_id, int(total))
