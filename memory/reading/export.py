"""What Eva keeps that one person wrote (their right of access, beside /forget-me's erasure):
every message of theirs still in the log of the chats asked for, with its chat, date and text;
per chat, how many memory lines credit or name them (by any name the log shows for them); and
what an erasure would remove. Read in one session; other people's words are never read out,
only counted (the messages of others that mention the person).

Scopes: a server (its channels, threads and imports), a person's DMs with the bot, or
everything (the host's `eva export --user ID`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime

from sqlalchemy import BigInteger, ColumnElement, cast, func, literal, or_, select, true
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from memory.privacy.mention_erasure import person_names
from memory.storage.models import Chat, Message, TreeNode

ERASURE_NOTE = {
    "server": (
        "/forget-me in this server would erase every message listed here, put @unknown-user in"
        " place of your name in the {mentions} messages of others that mention you, and rebuild"
        " the memory lines counted here without you."
    ),
    "dms": (
        "/forget-me in our DMs would delete our whole DM memory: every message listed here, my"
        " replies to you and the memory lines counted here."
    ),
    "everywhere": (
        "`eva forget --user` would erase every message listed here, put @unknown-user in place"
        " of the person's name in the {mentions} messages of others that mention them, delete"
        " their DM memory whole and rebuild the memory lines counted here without them."
    ),
}


@dataclass(frozen=True, slots=True)
class ExportedMessage:
    chat: str
    index: int
    date: str  # ISO 8601, UTC
    text: str
    edited: str | None = None


@dataclass(frozen=True, slots=True)
class ChatSummary:
    chat: str
    messages: int
    lines_naming_you: int  # memory lines (summaries or kept messages) that credit or name them


@dataclass(frozen=True, slots=True)
class PersonExport:
    user_id: int
    scope: str  # "server", "dms" or "everywhere"
    made_at: str
    messages: list[ExportedMessage] = field(default_factory=list)
    chats: list[ChatSummary] = field(default_factory=list)
    mentioned_by_others: int = 0

    @property
    def erasure(self) -> str:
        return ERASURE_NOTE[self.scope].format(mentions=self.mentioned_by_others)

    def render(self) -> str:
        """The file: JSON, one object (readable, and machine-readable for whoever takes it on)."""
        body = {
            "what": "Everything Eva keeps that you wrote, as of made_at",
            "user_id": str(self.user_id),
            "scope": self.scope,
            "made_at": self.made_at,
            "message_count": len(self.messages),
            "chats": [asdict(c) for c in self.chats],
            "messages_of_others_that_mention_you": self.mentioned_by_others,
            "what_erasure_would_remove": self.erasure,
            "messages": [asdict(m) for m in self.messages],
        }
        return json.dumps(body, ensure_ascii=False, indent=1) + "\n"


def chats_in_scope(scope: str, guild_id: int | None, dm_chat_ids: Sequence[int]) -> ColumnElement[bool]:
    """The WHERE clause of the chats an export reads."""
    if scope == "server":
        return Chat.guild_id == guild_id
    if scope == "dms":
        return Chat.id.in_(list(dm_chat_ids))
    return true()


async def export_person(
    s: AsyncSession, user_id: int, scope: str, where: ColumnElement[bool], now: datetime
) -> PersonExport:
    chats = dict((await s.execute(select(Chat.id, Chat.name).where(where).order_by(Chat.id))).all())
    if not chats:
        return PersonExport(user_id, scope, now.isoformat())
    rows = await s.execute(
        select(Message.chat_id, Message.idx, Message.created_at, Message.edited_at, Message.text)
        .where(Message.chat_id.in_(list(chats)), Message.author_id == user_id, Message.text.is_not(None))
        .order_by(Message.chat_id, Message.idx)
    )
    messages, counted = [], dict.fromkeys(chats, 0)
    for chat_id, idx, created, edited, text in rows:
        counted[chat_id] += 1
        edited_at = edited.isoformat() if edited else None
        messages.append(ExportedMessage(chats[chat_id], idx, created.isoformat(), text or "", edited_at))
    wanted = cast(literal([user_id], ARRAY(BigInteger)), ARRAY(BigInteger))
    mentioned = await s.scalar(
        select(func.count()).where(
            Message.chat_id.in_(list(chats)),
            Message.mention_ids.contains(wanted),
            Message.author_id.is_distinct_from(user_id),
        )
    )
    naming = await _lines_naming(s, list(chats), await person_names(s, chats, user_id))
    summaries = [
        ChatSummary(name, counted[chat_id], naming.get(chat_id, 0))
        for chat_id, name in chats.items()
        if counted[chat_id] or naming.get(chat_id)
    ]
    return PersonExport(user_id, scope, now.isoformat(), messages, summaries, int(mentioned or 0))


async def _lines_naming(s: AsyncSession, chat_ids: list[int], names: set[str]) -> dict[int, int]:
    """Per chat, the tree's lines whose text holds one of ``names`` (a line credits a person
    by name: docs/design.md, the compactor's prompt)."""
    usable = sorted(name for name in names if name.strip())
    if not usable:
        return {}
    holds = or_(*[TreeNode.text.contains(name, autoescape=True) for name in usable])
    rows = await s.execute(
        select(TreeNode.chat_id, func.count())
        .where(TreeNode.chat_id.in_(chat_ids), holds)
        .group_by(TreeNode.chat_id)
    )
    return {chat_id: int(count) for chat_id, count in rows.all()}
