"""The web dashboard's one-time sign-in links (only a hash of each secret) and the audit list
of per-server setting changes (who by id, when, what). Neither holds a name or message text.

Revision ID: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"


def upgrade() -> None:
    op.create_table(
        "dashboard_links",
        sa.Column("token_hash", sa.LargeBinary(32), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=True),
        sa.Column("user_id", sa.BigInteger(), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_dashboard_links")),
    )
    op.create_index(op.f("ix_dashboard_links_user_id"), "dashboard_links", ["user_id"])
    op.create_table(
        "settings_audit",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=True),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("setting", sa.String(32), nullable=False),
        sa.Column("value", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_settings_audit")),
    )
    op.create_index("ix_settings_audit_guild_created", "settings_audit", ["guild_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_settings_audit_guild_created", table_name="settings_audit")
    op.drop_table("settings_audit")
    op.drop_index(op.f("ix_dashboard_links_user_id"), table_name="dashboard_links")
    op.drop_table("dashboard_links")
