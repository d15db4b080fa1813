"""Erasing a person from the messages of others that mention them (docs/design.md, erasure).

Erasure of person P covers what P wrote (memory/privacy/erase.py) and, here, what the bot itself put
into other people's lines about P: when Alice wrote ``<@P>``, the log shows "@P's name",
a name Discord resolved, not one Alice typed. So in every message of the erased chats that
mentions P, the name shown for P (and any raw ``<@P>``) becomes ``@unknown-user``, P's id
and name leave ``mention_ids``/``mention_names``, and the lines built over those messages are
deleted and rebuilt, like after an edit. The rest of Alice's words stay: they are hers,
including a name she typed by hand.

What the bot itself wrote about P is memory/privacy/bot_words.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import cast, literal, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.types import BigInteger

from memory.privacy.rebuild import drop_lines_over, lock_rows
from memory.storage.log import tail_line_bytes
from memory.storage.models import Message
from memory.text.mentions import scrub_person


async def scrub_mentions(session: AsyncSession, chat_ids: Iterable[int], person: int) -> tuple[int, int]:
    """Take ``person`` out of every message of ``chat_ids`` that mentions them; returns the
    number of messages changed and of lines deleted for rebuilding."""
    ids = list(chat_ids)
    if not ids:
        return 0, 0
    wanted = cast(literal([person], ARRAY(BigInteger)), ARRAY(BigInteger))
    mentioning = (Message.chat_id.in_(ids), Message.mention_ids.contains(wanted))
    chats = sorted(set((await session.scalars(select(Message.chat_id).where(*mentioning))).all()))
    if not chats:
        return 0, 0
    states = await lock_rows(session, chats)
    rows = list(
        (
            await session.scalars(
                select(Message).where(*mentioning).order_by(Message.chat_id, Message.idx).with_for_update()
            )
        ).all()
    )
    changed: dict[int, list[int]] = {}
    for m in rows:
        ids_now = list(m.mention_ids or [])
        # One name per id; an erasure must never fail on a row written otherwise.
        names_now = ([*(m.mention_names or [])] + [""] * len(ids_now))[: len(ids_now)]
        text, kept_ids, kept_names = scrub_person(m.text or "", ids_now, names_now, person)
        m.mention_ids, m.mention_names = list(kept_ids) or None, list(kept_names) or None
        if m.text is not None and text != m.text:
            m.text = text
            m.line_bytes = tail_line_bytes(m.idx, m.author_name, text)
        changed.setdefault(m.chat_id, []).append(m.idx)
    lines = await drop_lines_over(session, changed, states)
    return len(rows), lines


async def person_names(session: AsyncSession, chat_ids: Iterable[int], person: int) -> set[str]:
    """Every name the log shows for ``person`` in these chats: as an author, and as mentioned."""
    ids = list(chat_ids)
    if not ids:
        return set()
    authored = await session.scalars(
        select(Message.author_name)
        .where(Message.chat_id.in_(ids), Message.author_id == person, Message.author_name.is_not(None))
        .distinct()
    )
    names = {name for name in authored.all() if name}
    wanted = cast(literal([person], ARRAY(BigInteger)), ARRAY(BigInteger))
    rows = await session.execute(
        select(Message.mention_ids, Message.mention_names).where(
            Message.chat_id.in_(ids), Message.mention_ids.contains(wanted)
        )
    )
    for mention_ids, mention_names in rows:
        pairs = zip(mention_ids or (), mention_names or (), strict=False)
        names.update(name for mentioned, name in pairs if mentioned == person and name)
    return names
