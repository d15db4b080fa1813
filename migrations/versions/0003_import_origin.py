"""Imports keep who and where: the exported channel's id, and whether a chat holds messages
whose authors are known only by name (a JSONL import without an author-id map).

Revision ID: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"


def upgrade() -> None:
    op.add_column("chats", sa.Column("source_channel_id", sa.BigInteger(), nullable=True))
    op.add_column(
        "chats",
        sa.Column("authors_by_name", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )


def downgrade() -> None:
    op.drop_column("chats", "authors_by_name")
    op.drop_column("chats", "source_channel_id")
