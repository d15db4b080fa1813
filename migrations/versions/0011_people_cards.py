"""People cards: a short card per person active in a chat (docs/design.md, people cards), and
the memory row's flag that they are due to be built again (after a swap, or after an erasure
or edit deleted lines they were built from).

Revision ID: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"


def upgrade() -> None:
    op.create_table(
        "people_cards",
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("person_id", sa.BigInteger(), nullable=False),
        sa.Column("rank", sa.SmallInteger(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("built_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name="fk_people_cards_chat_id_chats", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("chat_id", "person_id", name="pk_people_cards"),
    )
    op.add_column(
        "memory_rows", sa.Column("cards_due", sa.Boolean(), server_default=sa.text("false"), nullable=False)
    )


def downgrade() -> None:
    op.drop_column("memory_rows", "cards_due")
    op.drop_table("people_cards")
