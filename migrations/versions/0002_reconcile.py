"""Reconciliation with Discord: DM chats keyed by their recipient, and a per-chat cursor for the
background walk over old history (docs/design.md, reliability).

Revision ID: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("chats", sa.Column("recipient_id", sa.BigInteger(), nullable=True))
    op.create_index(op.f("ix_chats_recipient_id"), "chats", ["recipient_id"])
    # DM chats logged before this revision: the person is the one human author in them.
    op.execute("""
        UPDATE chats SET recipient_id = (
            SELECT m.author_id FROM messages m
            WHERE m.chat_id = chats.id AND NOT m.is_bot AND m.author_id IS NOT NULL
            ORDER BY m.idx LIMIT 1
        )
        WHERE kind = 'dm' AND recipient_id IS NULL
    """)
    op.create_table(
        "reconcile_cursors",
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("walk_after", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("walk_started_at", TZ, nullable=True),
        sa.Column("due_at", TZ, server_default=sa.func.now(), nullable=False),
        sa.Column("history_reconciled_at", TZ, nullable=True),
        sa.Column("recent_reconciled_at", TZ, nullable=True),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name=op.f("fk_reconcile_cursors_chat_id_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("chat_id", name=op.f("pk_reconcile_cursors")),
    )
    op.create_index(op.f("ix_reconcile_cursors_due_at"), "reconcile_cursors", ["due_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_reconcile_cursors_due_at"), table_name="reconcile_cursors")
    op.drop_table("reconcile_cursors")
    op.drop_index(op.f("ix_chats_recipient_id"), table_name="chats")
    op.drop_column("chats", "recipient_id")
