"""Per-server settings (/settings) and an index for the host-wide monthly spend.

Revision ID: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"

EMPTY_LIST = sa.text("'[]'::jsonb")


def upgrade() -> None:
    op.create_table(
        "guild_settings",
        sa.Column("guild_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("reply_mode", sa.String(16), nullable=True),
        sa.Column("reply_channels", postgresql.JSONB(), server_default=EMPTY_LIST, nullable=False),
        sa.Column("reply_to_name", sa.Boolean(), nullable=True),
        sa.Column("allow_roles", postgresql.JSONB(), server_default=EMPTY_LIST, nullable=False),
        sa.Column("block_roles", postgresql.JSONB(), server_default=EMPTY_LIST, nullable=False),
        sa.Column("allow_members", postgresql.JSONB(), server_default=EMPTY_LIST, nullable=False),
        sa.Column("block_members", postgresql.JSONB(), server_default=EMPTY_LIST, nullable=False),
        sa.Column("model", sa.String(100), nullable=True),
        sa.Column("timezone", sa.String(64), nullable=True),
        sa.Column("monthly_budget_usd", sa.Numeric(12, 2), nullable=True),
        sa.Column("alert_channel_id", sa.BigInteger(), nullable=True),
        sa.Column("budget_warned_month", sa.String(7), nullable=True),
        sa.Column("budget_paused_month", sa.String(7), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("guild_id", name=op.f("pk_guild_settings")),
    )
    op.create_index("ix_usage_ledger_created_at", "usage_ledger", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_usage_ledger_created_at", table_name="usage_ledger")
    op.drop_table("guild_settings")
