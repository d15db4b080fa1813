"""Search indexes that lead with the chat: a small chat no longer pays for a big one's matches.

The full-text and trigram GIN indexes covered every chat, so a word common in a 1M-message
chat filled the bitmap of a recall in a 10,000-message chat beside it with TIDs to throw away.
btree_gin lets a GIN index hold the chat id as its first column (one posting list per
(chat, word)). btree_gin is a trusted extension since PostgreSQL 13: a database owner may
create it without superuser, as with pg_trgm.

Revision ID: 0004
"""

from __future__ import annotations

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    op.create_index("ix_messages_chat_tsv", "messages", ["chat_id", "tsv"], postgresql_using="gin")
    op.create_index(
        "ix_messages_chat_text_trgm",
        "messages",
        ["chat_id", "text"],
        postgresql_using="gin",
        postgresql_ops={"text": "gin_trgm_ops"},
    )
    # Recall by author: the name's trigrams, ANDed with the word's bitmap. Not led by the chat:
    # PostgreSQL does not AND two indexes that both take "chat_id = $1", and the word's index
    # already does (memory/reading/search.py).
    op.create_index(
        "ix_messages_author_trgm",
        "messages",
        ["author_name"],
        postgresql_using="gin",
        postgresql_ops={"author_name": "gin_trgm_ops"},
    )
    op.drop_index("ix_messages_tsv", table_name="messages")
    op.drop_index("ix_messages_text_trgm", table_name="messages")


def downgrade() -> None:
    op.drop_index("ix_messages_author_trgm", table_name="messages")
    op.create_index("ix_messages_tsv", "messages", ["tsv"], postgresql_using="gin")
    op.create_index(
        "ix_messages_text_trgm",
        "messages",
        ["text"],
        postgresql_using="gin",
        postgresql_ops={"text": "gin_trgm_ops"},
    )
    op.drop_index("ix_messages_chat_text_trgm", table_name="messages")
    op.drop_index("ix_messages_chat_tsv", table_name="messages")
    # The extension stays: dropping it would need every other user of it gone first.
