"""Where a chat's history may start again after an erasure: a wipe's moment (older messages
are never logged again) and a person's erasure's moment (no backfill starts below it). Both
are Discord snowflakes, a time; neither names anyone.

Revision ID: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"


def upgrade() -> None:
    op.add_column("chats", sa.Column("erased_before", sa.BigInteger(), nullable=True))
    op.add_column("chats", sa.Column("backfill_floor", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("chats", "backfill_floor")
    op.drop_column("chats", "erased_before")
