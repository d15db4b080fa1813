"""The schema: one table per concept of docs/design.md (chats, messages, nodes, memory rows,
opt-outs, the usage ledger). Alembic migrations are the only way it changes; this module
is what they are written against and what the code queries.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Computed,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Numeric,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REGCONFIG, TSVECTOR
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Named constraints so migrations can drop and alter them by a name we chose.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Chat(Base):
    """One memory: a Discord channel, thread or DM channel, or an imported log."""

    __tablename__ = "chats"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    discord_id: Mapped[int | None] = mapped_column(BigInteger, unique=True)
    guild_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    parent_id: Mapped[int | None] = mapped_column(BigInteger)  # a thread's channel
    kind: Mapped[str] = mapped_column(String(16))  # text, thread, dm, imported
    name: Mapped[str] = mapped_column(String(200))
    timezone: Mapped[str] = mapped_column(String(64), server_default="UTC")
    next_index: Mapped[int] = mapped_column(BigInteger, server_default="0")
    logging_paused: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    last_message_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # A DM chat's person: /forget-me finds the chat by it, even after they deleted every
    # message of theirs there (the bot's replies quoting them must go too).
    recipient_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    # An import: the exported channel's id. Not discord_id, which is the key of the live
    # channel; an import of a channel Eva also reads live is a second, separate memory.
    source_channel_id: Mapped[int | None] = mapped_column(BigInteger)
    # Some messages are known only by their author's name (a JSONL import without an
    # author-id map): erasing a person by id cannot reach them, only a wipe of the chat.
    authors_by_name: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    # A wipe's moment as a Discord snowflake: every message older than it was erased, so none
    # is ever logged again (an append checks it under the chat's lock) and no backfill starts
    # below it. Says when, never who.
    erased_before: Mapped[int | None] = mapped_column(BigInteger)
    # Recall's text search configuration (stemming in the chat's language, accents folded):
    # the server's choice or a guess from the first messages; NULL until then (eva_simple).
    search_config: Mapped[str | None] = mapped_column(REGCONFIG)
    # A person's erasure in this chat's guild committed at this snowflake, after ingest had
    # handled the history before it: no backfill starts below it, so a restart cannot fetch
    # the erased person's older messages again. Cleared once a newer message is logged (the
    # log itself is then past it). Says when, never who.
    backfill_floor: Mapped[int | None] = mapped_column(BigInteger)


class Message(Base):
    """Message ``idx`` of a chat, word for word. Erasure keeps the slot, empty."""

    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint("chat_id", "snowflake", name="uq_messages_chat_snowflake"),
        Index("ix_messages_chat_author", "chat_id", "author_id"),
        # Led by the chat (btree_gin): recall in a small chat never reads a big chat's matches.
        Index("ix_messages_chat_tsv", "chat_id", "tsv", postgresql_using="gin"),
        Index(
            "ix_messages_chat_text_trgm",
            "chat_id",
            "text",
            postgresql_using="gin",
            postgresql_ops={"text": "gin_trgm_ops"},
        ),
        Index("ix_messages_mention_ids", "mention_ids", postgresql_using="gin"),
        Index(
            "ix_messages_author_trgm",
            "author_name",
            postgresql_using="gin",
            postgresql_ops={"author_name": "gin_trgm_ops"},
        ),
    )

    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True)
    idx: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    snowflake: Mapped[int | None] = mapped_column(BigInteger)
    author_id: Mapped[int | None] = mapped_column(BigInteger)
    author_name: Mapped[str | None] = mapped_column(String(200))
    is_bot: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    edited_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    erased_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The text as the memory sees it (content, then file/sticker/embed names, reply mark).
    text: Mapped[str | None] = mapped_column(Text)
    attachments: Mapped[list[str] | None] = mapped_column(JSONB)
    reply_to: Mapped[int | None] = mapped_column(BigInteger)
    # UTF-8 bytes of the message's raw-tail line; summed to measure the tail without reading it.
    line_bytes: Mapped[int] = mapped_column(Integer, server_default="0")
    # The people the message mentions and the name shown for each ("" where the raw <@id>
    # stayed), so erasing a person finds the messages that name them (memory/text/mentions.py).
    mention_ids: Mapped[list[int] | None] = mapped_column(ARRAY(BigInteger))
    mention_names: Mapped[list[str] | None] = mapped_column(ARRAY(Text))
    # The text search configuration the row's words are indexed with: its chat's when it was
    # written (memory/text/language.py); a chat's change rewrites its rows.
    search_config: Mapped[str] = mapped_column(REGCONFIG, server_default="eva_simple")
    # The text's words, then the author's name (weight B), so "Max wedding" finds what Max
    # wrote about it (migrations/versions/0010_ranked_recall.py).
    tsv: Mapped[Any] = mapped_column(
        TSVECTOR,
        Computed(
            "to_tsvector(search_config, coalesce(text, '')) || "
            "setweight(to_tsvector(search_config, coalesce(author_name, '')), 'B')",
            persisted=True,
        ),
    )


class TreeNode(Base):
    """Node (level, idx) of a chat's summary tree: messages [idx*2^level, (idx+1)*2^level)."""

    __tablename__ = "nodes"

    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True)
    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    idx: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    bytes: Mapped[int] = mapped_column(Integer)
    first_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    by_model: Mapped[bool] = mapped_column(Boolean)
    model: Mapped[str | None] = mapped_column(String(100))
    tries: Mapped[int] = mapped_column(SmallInteger, server_default="0")
    input_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    output_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    cache_write_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    cache_read_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class MemoryRow(Base):
    """What the reply model reads: ``shown`` tiles [0, boundary); ``staged`` is the next row,
    built in the background and swapped in when the chat is quiet."""

    __tablename__ = "memory_rows"

    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True)
    shown: Mapped[list[list[int]]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    boundary: Mapped[int] = mapped_column(BigInteger, server_default="0")
    # none_as_null: None is SQL NULL, not the JSON value null, so `staged IS NOT NULL` finds
    # only rows with a staged row (the scheduler's work list) and not every row ever swapped.
    staged: Mapped[list[list[int]] | None] = mapped_column(JSONB(none_as_null=True))
    staged_boundary: Mapped[int | None] = mapped_column(BigInteger)
    batch_target: Mapped[int | None] = mapped_column(Integer)  # bytes; set while a batch is unfinished
    staged_ready: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    needs_repair: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    version: Mapped[int] = mapped_column(Integer, server_default="0")
    swaps: Mapped[int] = mapped_column(Integer, server_default="0")
    forced_swaps: Mapped[int] = mapped_column(Integer, server_default="0")
    last_swap_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # The people cards are to be built again, once the chat is quiet (a swap, or an erasure or
    # edit that deleted lines they may have been built from): memory/compaction/cards.py.
    cards_due: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))


class PersonCard(Base):
    """A short card about one person active in a chat, built by the compaction model from the
    memory lines that name them (docs/design.md, people cards); shown before the row."""

    __tablename__ = "people_cards"

    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True)
    person_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    rank: Mapped[int] = mapped_column(SmallInteger)  # 0: the most active of the window
    name: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    built_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class OptOut(Base):
    """People who asked not to be remembered. ``guild_id`` 0 is the scope of DMs."""

    __tablename__ = "opt_outs"

    guild_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    since: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class UsageEntry(Base):
    """One model call: its four token counters and its cost at list price."""

    __tablename__ = "usage_ledger"
    __table_args__ = (
        Index("ix_usage_ledger_guild_time", "guild_id", "created_at"),
        # The host-wide monthly budget sums this month's rows of every guild and DM.
        Index("ix_usage_ledger_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    chat_id: Mapped[int | None] = mapped_column(ForeignKey("chats.id", ondelete="SET NULL"), index=True)
    guild_id: Mapped[int | None] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))  # reply, compact
    model: Mapped[str] = mapped_column(String(100))
    input_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    cache_write_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    cache_write_1h_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    cache_read_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    output_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    cost_usd: Mapped[Decimal] = mapped_column(Numeric(14, 8), server_default="0")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class ReconcileCursor(Base):
    """Where the background reconciler is in a chat's history (bot/gateway/reconcile.py): it walks
    the log oldest first, one page of Discord history at a time, and starts over every
    RECONCILE_PERIOD; the walk resumes from ``walk_after`` after a restart."""

    __tablename__ = "reconcile_cursors"

    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True)
    walk_after: Mapped[int] = mapped_column(BigInteger, server_default="0")  # snowflake, exclusive
    walk_started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    due_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), index=True)
    history_reconciled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    recent_reconciled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class GuildSettings(Base):
    """One server's choices made with /settings; a NULL column means "the host's default"
    (the environment setting of the same name), so changing the default reaches every server
    that never chose. Lists hold Discord ids (channels, roles, members)."""

    __tablename__ = "guild_settings"

    guild_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    reply_mode: Mapped[str | None] = mapped_column(String(16))  # everywhere, channels, nowhere
    reply_channels: Mapped[list[int]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    # Channels where Eva may answer unasked when the group asks something she can help with.
    join_in_channels: Mapped[list[int]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    reply_to_name: Mapped[bool | None] = mapped_column(Boolean)
    allow_roles: Mapped[list[int]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    block_roles: Mapped[list[int]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    allow_members: Mapped[list[int]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    block_members: Mapped[list[int]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    model: Mapped[str | None] = mapped_column(String(100))
    timezone: Mapped[str | None] = mapped_column(String(64))
    search_language: Mapped[str | None] = mapped_column(String(32))  # recall's stemming; None: guessed
    monthly_budget_usd: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    alert_channel_id: Mapped[int | None] = mapped_column(BigInteger)
    # "YYYY-MM" of the month whose 80% warning / 100% notice was sent: once per month each.
    budget_warned_month: Mapped[str | None] = mapped_column(String(7))
    budget_paused_month: Mapped[str | None] = mapped_column(String(7))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class DashboardLink(Base):
    """A one-time sign-in link to the web dashboard (bot/dashboard/): only the SHA-256 of its
    secret is kept, so a copy of the table signs nobody in. ``guild_id`` None: the host's link
    (`eva dashboard-link`); else a member's link to that one server (`/memory dashboard`)."""

    __tablename__ = "dashboard_links"

    token_hash: Mapped[bytes] = mapped_column(LargeBinary(32), primary_key=True)
    guild_id: Mapped[int | None] = mapped_column(BigInteger)
    user_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SettingsAudit(Base):
    """Who changed which per-server setting, when (the dashboard's settings page shows it).
    ``user_id`` is an id, never a name (the page names them from Discord's cache); a person's
    erasure sets it to NULL. ``source``: "slash" (/settings), "dashboard" or "host"."""

    __tablename__ = "settings_audit"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    guild_id: Mapped[int] = mapped_column(BigInteger)
    user_id: Mapped[int | None] = mapped_column(BigInteger)
    source: Mapped[str] = mapped_column(String(16))
    setting: Mapped[str] = mapped_column(String(32))
    value: Mapped[str] = mapped_column(String(200))  # the new value as shown (ids, never names)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (Index("ix_settings_audit_guild_created", "guild_id", "created_at"),)


class RateMark(Base):
    """When something limited in time last happened: ``kind`` "export" (``scope``: the person;
    once an hour; erasure of the person deletes it) or "join_in" (``scope``: the channel; one
    unprompted reply per JOIN_IN_COOLDOWN). In the database so that a restart or a second
    process does not reset the limit."""

    __tablename__ = "rate_marks"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    scope: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
