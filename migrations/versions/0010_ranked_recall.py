"""Words as people use them: a text search configuration per chat (stemming in the chat's
language, accents folded) and the author's name searchable with the text.

- ``eva_<language>`` configurations: the language's snowball stemmer behind ``unaccent`` (a
  filtering dictionary, so "Borås" is found as "boras" and "café" as "cafe"); ``eva_simple``
  folds accents and stems nothing. ``to_tsvector(regconfig, text)`` is IMMUTABLE whatever the
  configuration, so the generated column below may call it (``unaccent()`` itself is not).
  unaccent is a trusted extension since PostgreSQL 13, as btree_gin and pg_trgm are.
- ``chats.search_config``: the chat's configuration (NULL: not chosen yet, read as
  ``eva_simple``; chats of 100+ messages keep eva_simple); ``messages.search_config``: the
  one the row's words were indexed with, so the generated ``tsv`` can use it (a generated
  column reads only its own row).
- ``tsv`` = the text's words, then the author's name (weight B): "Max wedding" finds the
  message Max wrote about the wedding. The name comes after the text, so a phrase of the text
  never runs into it.
- ``guild_settings.search_language``: the server's choice, over the guess from its messages.

Revision ID: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | None = "0009"

# The snowball stemmers PostgreSQL 13-18 all ship (memory/text/language.py guesses among them).
LANGUAGES = (
    "danish",
    "dutch",
    "english",
    "finnish",
    "french",
    "german",
    "italian",
    "norwegian",
    "portuguese",
    "russian",
    "spanish",
    "swedish",
)
# The token kinds that are words (the default parser's asciiword needs no unaccent).
_WORDS = "asciiword, asciihword, hword_asciipart, word, hword, hword_part"

TSV = (
    "to_tsvector(search_config, coalesce(text, '')) || "
    "setweight(to_tsvector(search_config, coalesce(author_name, '')), 'B')"
)


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
    op.execute("CREATE TEXT SEARCH CONFIGURATION eva_simple (COPY = simple)")
    op.execute(f"ALTER TEXT SEARCH CONFIGURATION eva_simple ALTER MAPPING FOR {_WORDS} WITH unaccent, simple")
    for language in LANGUAGES:
        op.execute(f"CREATE TEXT SEARCH CONFIGURATION eva_{language} (COPY = {language})")
        op.execute(
            f"ALTER TEXT SEARCH CONFIGURATION eva_{language} "
            f"ALTER MAPPING FOR {_WORDS} WITH unaccent, {language}_stem"
        )
    op.add_column("chats", sa.Column("search_config", postgresql.REGCONFIG(), nullable=True))
    # A chat already past the guess (memory/storage/search_config.py GUESS_AT = 100) keeps its
    # words as typed: guessing on its next message would re-index it whole inside an append.
    # A server's language setting re-indexes its chats on purpose.
    op.execute("UPDATE chats SET search_config = 'eva_simple' WHERE next_index >= 100")
    op.add_column("guild_settings", sa.Column("search_language", sa.String(32), nullable=True))
    op.add_column(
        "messages",
        sa.Column(
            "search_config",
            postgresql.REGCONFIG(),
            server_default=sa.text("'eva_simple'::regconfig"),
            nullable=False,
        ),
    )
    op.drop_index("ix_messages_chat_tsv", table_name="messages")
    op.drop_column("messages", "tsv")
    op.add_column("messages", sa.Column("tsv", postgresql.TSVECTOR(), sa.Computed(TSV, persisted=True)))
    op.create_index("ix_messages_chat_tsv", "messages", ["chat_id", "tsv"], postgresql_using="gin")


def downgrade() -> None:
    op.drop_index("ix_messages_chat_tsv", table_name="messages")
    op.drop_column("messages", "tsv")
    op.add_column(
        "messages",
        sa.Column(
            "tsv",
            postgresql.TSVECTOR(),
            sa.Computed("to_tsvector('simple'::regconfig, coalesce(text, ''))", persisted=True),
        ),
    )
    op.create_index("ix_messages_chat_tsv", "messages", ["chat_id", "tsv"], postgresql_using="gin")
    op.drop_column("messages", "search_config")
    op.drop_column("guild_settings", "search_language")
    op.drop_column("chats", "search_config")
    op.execute("DROP TEXT SEARCH CONFIGURATION IF EXISTS eva_simple")
    for language in LANGUAGES:
        op.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS eva_{language}")
    # unaccent stays, as btree_gin does in 0004.
