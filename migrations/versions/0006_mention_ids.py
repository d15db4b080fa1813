"""The people a message mentions, in columns of their own (ids, and the names shown for them),
so erasing a person finds the messages of others that name them.

Messages logged before this revision hold their mentions raw (``<@123>``): their ids are
found in the text here, with an empty name (the raw form is what erasure replaces then).

Revision ID: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"

# Ids in the order they first appear; a number past bigint (typed text, not an id) is skipped.
BACKFILL = r"""
UPDATE messages AS msg
SET mention_ids = found.ids,
    mention_names = array_fill(''::text, ARRAY[cardinality(found.ids)])
FROM (
    SELECT chat_id, idx, array_agg(person ORDER BY first_seen) AS ids
    FROM (
        SELECT chat_id, idx, found.match[1]::numeric::bigint AS person, min(found.pos) AS first_seen
        FROM messages
        CROSS JOIN LATERAL regexp_matches(text, '<@!?(\d{1,20})>', 'g') WITH ORDINALITY AS found(match, pos)
        WHERE text ~ '<@!?\d' AND found.match[1]::numeric <= 9223372036854775807
        GROUP BY chat_id, idx, person
    ) AS each_person
    GROUP BY chat_id, idx
) AS found
WHERE msg.chat_id = found.chat_id AND msg.idx = found.idx
"""


def upgrade() -> None:
    op.add_column("messages", sa.Column("mention_ids", postgresql.ARRAY(sa.BigInteger()), nullable=True))
    op.add_column("messages", sa.Column("mention_names", postgresql.ARRAY(sa.Text()), nullable=True))
    op.execute(BACKFILL)
    op.create_index("ix_messages_mention_ids", "messages", ["mention_ids"], postgresql_using="gin")


def downgrade() -> None:
    op.drop_index("ix_messages_mention_ids", table_name="messages")
    op.drop_column("messages", "mention_names")
    op.drop_column("messages", "mention_ids")
