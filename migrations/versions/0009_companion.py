"""The companion's marks and choices (docs/design.md section 9): ``rate_marks``, the last time something
limited in time happened (an export of a person, an unprompted reply in a channel), kept in the
database so the limit holds across restarts and processes; and a server's "join in" channels.

Revision ID: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | None = "0008"


def upgrade() -> None:
    op.create_table(
        "rate_marks",
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("scope", sa.BigInteger(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("kind", "scope", name="pk_rate_marks"),
    )
    op.add_column(
        "guild_settings",
        sa.Column(
            "join_in_channels",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
    )


def downgrade() -> None:
    op.drop_column("guild_settings", "join_in_channels")
    op.drop_table("rate_marks")
