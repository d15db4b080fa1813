"""The initial schema: chats, messages, nodes, memory rows, opt-outs, usage ledger.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    # pg_trgm is a trusted extension: a database owner may create it without superuser.
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.create_table(
        "chats",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("discord_id", sa.BigInteger(), nullable=True),
        sa.Column("guild_id", sa.BigInteger(), nullable=True),
        sa.Column("parent_id", sa.BigInteger(), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("timezone", sa.String(64), server_default="UTC", nullable=False),
        sa.Column("next_index", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("logging_paused", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("last_message_at", TZ, nullable=True),
        sa.Column("created_at", TZ, server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chats")),
        sa.UniqueConstraint("discord_id", name=op.f("uq_chats_discord_id")),
    )
    op.create_index(op.f("ix_chats_guild_id"), "chats", ["guild_id"])

    op.create_table(
        "messages",
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("idx", sa.BigInteger(), nullable=False),
        sa.Column("snowflake", sa.BigInteger(), nullable=True),
        sa.Column("author_id", sa.BigInteger(), nullable=True),
        sa.Column("author_name", sa.String(200), nullable=True),
        sa.Column("is_bot", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("edited_at", TZ, nullable=True),
        sa.Column("erased_at", TZ, nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("attachments", postgresql.JSONB(), nullable=True),
        sa.Column("reply_to", sa.BigInteger(), nullable=True),
        sa.Column("line_bytes", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "tsv",
            postgresql.TSVECTOR(),
            sa.Computed("to_tsvector('simple'::regconfig, coalesce(text, ''))", persisted=True),
            nullable=True,
        ),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name=op.f("fk_messages_chat_id_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("chat_id", "idx", name=op.f("pk_messages")),
        sa.UniqueConstraint("chat_id", "snowflake", name="uq_messages_chat_snowflake"),
    )
    op.create_index("ix_messages_chat_author", "messages", ["chat_id", "author_id"])
    op.create_index("ix_messages_tsv", "messages", ["tsv"], postgresql_using="gin")
    op.create_index(
        "ix_messages_text_trgm",
        "messages",
        ["text"],
        postgresql_using="gin",
        postgresql_ops={"text": "gin_trgm_ops"},
    )

    op.create_table(
        "nodes",
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("idx", sa.BigInteger(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column("first_at", TZ, nullable=True),
        sa.Column("last_at", TZ, nullable=True),
        sa.Column("by_model", sa.Boolean(), nullable=False),
        sa.Column("model", sa.String(100), nullable=True),
        sa.Column("tries", sa.SmallInteger(), server_default="0", nullable=False),
        sa.Column("input_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("output_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("cache_write_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("cache_read_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", TZ, server_default=sa.func.now(), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name=op.f("fk_nodes_chat_id_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("chat_id", "level", "idx", name=op.f("pk_nodes")),
    )

    op.create_table(
        "memory_rows",
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("shown", postgresql.JSONB(), server_default=sa.text("'[]'::jsonb"), nullable=False),
        sa.Column("boundary", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("staged", postgresql.JSONB(), nullable=True),
        sa.Column("staged_boundary", sa.BigInteger(), nullable=True),
        sa.Column("batch_target", sa.Integer(), nullable=True),
        sa.Column("staged_ready", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("needs_repair", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("version", sa.Integer(), server_default="0", nullable=False),
        sa.Column("swaps", sa.Integer(), server_default="0", nullable=False),
        sa.Column("forced_swaps", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_swap_at", TZ, nullable=True),
        sa.Column("updated_at", TZ, server_default=sa.func.now(), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name=op.f("fk_memory_rows_chat_id_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("chat_id", name=op.f("pk_memory_rows")),
    )

    op.create_table(
        "opt_outs",
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("since", TZ, server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("guild_id", "user_id", name=op.f("pk_opt_outs")),
    )

    op.create_table(
        "usage_ledger",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=True),
        sa.Column("guild_id", sa.BigInteger(), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("model", sa.String(100), nullable=False),
        sa.Column("input_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("cache_write_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("cache_write_1h_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("cache_read_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("output_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("cost_usd", sa.Numeric(14, 8), server_default="0", nullable=False),
        sa.Column("created_at", TZ, server_default=sa.func.now(), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name=op.f("fk_usage_ledger_chat_id_chats"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_ledger")),
    )
    op.create_index(op.f("ix_usage_ledger_chat_id"), "usage_ledger", ["chat_id"])
    op.create_index("ix_usage_ledger_guild_time", "usage_ledger", ["guild_id", "created_at"])


def downgrade() -> None:
    op.drop_table("usage_ledger")
    op.drop_table("opt_outs")
    op.drop_table("memory_rows")
    op.drop_table("nodes")
    op.drop_table("messages")
    op.drop_table("chats")
    # pg_trgm stays: other schemas in the same database may use it.
