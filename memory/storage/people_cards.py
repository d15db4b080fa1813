"""The people cards' SQL (docs/design.md, people cards): who is active in a chat, the names of
the people who opted out, and the cards themselves: read, replaced whole, dropped.

Every erasure or edit that deletes lines drops the chat's cards (they may hold the old words)
and marks them due; the compactor builds them again from the rebuilt lines once the chat is
quiet (memory/compaction/cards.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from memory.storage.models import MemoryRow, OptOut, PersonCard

DM_SCOPE = 0  # opt-outs of direct messages are kept under guild id 0 (memory/engine_erasure.py)
# The activity window reads at most the newest this-many messages (by the primary key), so a
# chat's size never makes it slower; 20,000 is months of a busy channel.
ACTIVITY_SCAN = 20_000


@dataclass(frozen=True, slots=True)
class ActivePerson:
    person_id: int
    name: str  # the name they were last shown under
    names: tuple[str, ...]  # every name they were shown under in the window
    messages: int


@dataclass(frozen=True, slots=True)
class Card:
    person_id: int
    name: str
    text: str


_ACTIVE = text("""
    SELECT m.author_id, count(*) AS messages,
           (array_agg(m.author_name ORDER BY m.idx DESC))[1] AS name,
           array_agg(DISTINCT m.author_name) AS names
    FROM messages m
    WHERE m.chat_id = :chat_id AND m.idx >= :first AND m.created_at >= :since
      AND m.author_id IS NOT NULL AND m.author_name IS NOT NULL AND NOT m.is_bot
      AND m.author_id <> ALL(CAST(:excluded AS bigint[]))
    GROUP BY m.author_id
    ORDER BY messages DESC, m.author_id
    LIMIT :limit
""")


async def opted_out_ids(session: AsyncSession, guild_id: int | None) -> list[int]:
    rows = await session.scalars(select(OptOut.user_id).where(OptOut.guild_id == (guild_id or DM_SCOPE)))
    return sorted(rows.all())


async def active_people(
    session: AsyncSession, chat_id: int, total: int, since: datetime, limit: int, excluded: Sequence[int]
) -> list[ActivePerson]:
    """The ``limit`` people who wrote most in the chat since ``since`` (bots, erased messages
    and ``excluded`` people never count), most active first."""
    rows = await session.execute(
        _ACTIVE,
        {
            "chat_id": chat_id,
            "first": max(0, total - ACTIVITY_SCAN),
            "since": since,
            "excluded": list(excluded),
            "limit": limit,
        },
    )
    return [
        ActivePerson(int(person), str(name), tuple(n for n in names if n), int(count))
        for person, count, name, names in rows
    ]


_NAMES_OF = text("""
    SELECT DISTINCT m.author_name FROM messages m
    WHERE m.chat_id = :chat_id AND m.author_id = ANY(CAST(:people AS bigint[])) AND m.author_name IS NOT NULL
    UNION
    SELECT DISTINCT pair.name FROM messages m,
        unnest(m.mention_ids, m.mention_names) AS pair(id, name)
    WHERE m.chat_id = :chat_id AND m.mention_ids && CAST(:people AS bigint[])
      AND pair.id = ANY(CAST(:people AS bigint[])) AND pair.name <> ''
""")


async def names_in_chat(session: AsyncSession, chat_id: int, people: Sequence[int]) -> set[str]:
    """Every name the chat's log shows for these people, as authors and as mentioned."""
    if not people:
        return set()
    rows = await session.scalars(_NAMES_OF, {"chat_id": chat_id, "people": list(people)})
    return {name for name in rows.all() if name}


async def read_cards(session: AsyncSession, chat_id: int) -> list[Card]:
    rows = await session.scalars(
        select(PersonCard)
        .where(PersonCard.chat_id == chat_id)
        .order_by(PersonCard.rank, PersonCard.person_id)
    )
    return [Card(card.person_id, card.name, card.text) for card in rows.all()]


async def replace_cards(session: AsyncSession, chat_id: int, cards: Sequence[Card], now: datetime) -> None:
    """The chat's cards are these (in rank order), all at once."""
    await session.execute(delete(PersonCard).where(PersonCard.chat_id == chat_id))
    session.add_all(
        PersonCard(
            chat_id=chat_id, person_id=c.person_id, rank=k, name=c.name[:200], text=c.text, built_at=now
        )
        for k, c in enumerate(cards)
    )


async def drop_cards(session: AsyncSession, chat_ids: Iterable[int]) -> None:
    """The chats' lines changed under their cards: the cards go now and are due again. The
    row's version moves too, so a card call in flight (built from the old lines) is thrown
    away at its write (memory/compaction/cards.py); the ORM update keeps a row object loaded
    in this session in step."""
    ids = sorted(set(chat_ids))
    if not ids:
        return
    await session.execute(delete(PersonCard).where(PersonCard.chat_id.in_(ids)))
    await session.execute(
        update(MemoryRow)
        .where(MemoryRow.chat_id.in_(ids))
        .values(cards_due=True, version=MemoryRow.version + 1)
    )


async def drop_cards_about(
    session: AsyncSession, chat_ids: Iterable[int], person_id: int, names: Iterable[str]
) -> None:
    """An erased person: their own card, and every card that names them (any name they were
    shown under), go now; those chats' cards are due again (built from the scrubbed lines)."""
    ids = sorted(set(chat_ids))
    if not ids:
        return
    cards = (await session.execute(select(PersonCard).where(PersonCard.chat_id.in_(ids)))).scalars().all()
    wanted = [name.casefold() for name in names if name and name.strip()]
    touched = {
        card.chat_id
        for card in cards
        if card.person_id == person_id or any(name in card.text.casefold() for name in wanted)
    }
    await drop_cards(session, touched)
