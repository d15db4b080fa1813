"""The search behind `recall`: newest matches first, in a window that widens until it has enough.

Why a window: a common word ("that") matches ~10% of a chat. Collecting every match before
keeping the newest ones read the heap page of each (125,028 matches of "the" in a measured
415,000-message copy; recall p95 1,224 ms on 1M messages, docs/benchmarks.md). Searching
``[T - W, T)`` first, then the ``W`` before it with ``W`` growing, stops as soon as
RECALL_CANDIDATES matches are in hand: for a common word that is the newest few thousand
messages, read backwards along the primary key; a rare word takes a few index lookups.

Full-text first; trigrams (ILIKE) only as a fallback, when full-text matched nothing in the
whole chat (a fragment such as "padd", a name part, emoji, "%").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

# Candidates ranked at most (ts_rank + similarity): similarity() over 2,000 rows cost 22 ms by
# itself; 200 rows cost ~2 ms and still leave 10x the largest `limit` (20) to choose from.
RECALL_CANDIDATES = 200
# The first window: 4,096 messages hold the 200 candidates of any word in >= 5% of messages.
FIRST_WINDOW = 4096
# Each window is this many times the one before: a word absent from the chat costs
# log4(1M / 4,096) + 1 = 5 index lookups on a 1M-message chat instead of 9 when doubling.
WIDEN = 4


@dataclass(frozen=True, slots=True)
class Filters:
    chat_id: int
    query: str  # whitespace-normalised, storable
    pattern: str | None  # ILIKE pattern for the trigram fallback; None: no fallback
    author: str | None  # ILIKE pattern on the author's name
    author_id: int | None


def windows(total: int, first: int = FIRST_WINDOW, factor: int = WIDEN) -> Iterator[tuple[int, int]]:
    """``[lo, hi)`` slices of ``[0, total)`` from the newest, each ``factor`` times the one
    before (``first`` messages first), together covering every index exactly once."""
    hi, size = total, first
    while hi > 0:
        lo = max(0, hi - size)
        yield lo, hi
        hi, size = lo, size * factor


# The clauses of one search; each filter combination is its own statement rather than
# "(:author IS NULL OR ...)", which no index can serve.
_FULL_TEXT = "m.tsv @@ plainto_tsquery('simple', :query)"
_TRIGRAM = "m.text ILIKE :pattern"
# In a window (below), the index finds one lexeme, the query's longest; the whole query is
# checked on the rows found, in a form no index takes. PostgreSQL multiplies the frequencies
# of a query's lexemes as if independent: "apt-get" is 'apt-get' & 'apt' & 'get', estimated
# at 9 rows of 1M for 11,513 real ones, and on that estimate it read all 11,513 from the heap
# (45-70 ms) instead of ANDing with the window. One lexeme is estimated from its statistics.
_KEY_LEXEME = "m.tsv @@ CAST(CAST(:key AS text) AS tsquery)"
_WHOLE_QUERY = f"({_FULL_TEXT}) IS TRUE"

# How the chat is named decides which index finds it. Within a window, the fast plan ANDs the
# word's GIN bitmap with the primary-key range of the window, so only the window's matches
# reach the heap. PostgreSQL does not AND two indexes that both use "chat_id = $1" (the same
# clause), and btree_gin would take it with an int8 parameter: the GIN scan then returned the
# chat's every match (6,342 for "packages"), read from the heap each window (20-80 ms). As an
# int4, btree_gin cannot use it (no cross-type operators) and the primary key can. The window
# that reaches the chat's first message has no range to AND with: there the chat-led GIN
# indexes keep a small chat clear of a big chat's matches.
_CHAT_IN_RANGE = "m.chat_id = CAST(:chat_id AS integer)"
_CHAT_WHOLE = "m.chat_id = :chat_id"
_INT4_MAX = 2**31 - 1

# Plans for these words and this window, every time: after five runs of a statement
# PostgreSQL may settle on a generic plan, which cannot tell a word in 1 of 100,000 messages
# from one in 1 of 10 (measured with generic plans: p95 1,021 ms). In the same round trip:
# the query's full-text lexemes.
_PREPARE = text("""
    SELECT set_config('plan_cache_mode', 'force_custom_plan', true),
           tsvector_to_array(to_tsvector('simple', :query))
""")


@cache
def _statement(matches: tuple[str, ...], by_author: bool, by_author_id: bool, in_range: bool) -> TextClause:
    """One window's newest matches. The score is computed on the LIMITed rows only (the CTE):
    a window with thousands of matches costs similarity() on RECALL_CANDIDATES of them."""
    where = [_CHAT_IN_RANGE if in_range else _CHAT_WHOLE, *matches]
    if by_author:
        where.append("m.author_name ILIKE :author")
    if by_author_id:
        where.append("m.author_id = :author_id")
    return text(f"""
        WITH hits AS (
            SELECT m.idx, m.text, m.tsv
            FROM messages m
            WHERE m.idx >= :lo AND m.idx < :hi AND m.text IS NOT NULL
              AND {" AND ".join(where)}
            ORDER BY m.idx DESC
            LIMIT :wanted
        )
        SELECT h.idx, ts_rank(h.tsv, plainto_tsquery('simple', :query)) + similarity(h.text, :query)
        FROM hits h
    """)


def tsquery_literal(lexeme: str) -> str:
    """``lexeme`` as tsquery input: quoted, its quotes doubled and backslashes escaped."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


async def _newest(
    session: AsyncSession, filters: Filters, total: int, wanted: int, lexemes: list[str] | None
) -> list[tuple[int, float]]:
    """The newest ``wanted`` matches, window by window: full-text when ``lexemes`` is given,
    else the trigram pattern."""
    found: list[tuple[int, float]] = []
    params: dict[str, object] = {"chat_id": filters.chat_id, "query": filters.query}
    if lexemes:
        params["key"] = tsquery_literal(max(lexemes, key=len))
        keyed = (_KEY_LEXEME,) if len(lexemes) == 1 else (_KEY_LEXEME, _WHOLE_QUERY)
    else:
        params["pattern"] = filters.pattern
    if filters.author is not None:
        params["author"] = filters.author
    if filters.author_id is not None:
        params["author_id"] = filters.author_id
    by_author, by_author_id = filters.author is not None, filters.author_id is not None
    # With an author, no windows: the author's index and the word's, ANDed over the whole
    # chat, read only the author's matches; per window both bitmaps were built again
    # (58,163 TIDs of "what" five times over: 185-385 ms for a recall by "thoreauputic").
    for lo, hi in windows(total, total if by_author else FIRST_WINDOW):
        in_range = lo > 0 and filters.chat_id <= _INT4_MAX
        if not lexemes:
            matches: tuple[str, ...] = (_TRIGRAM,)
        else:
            matches = keyed if in_range else (_FULL_TEXT,)
        statement = _statement(matches, by_author, by_author_id, in_range)
        rows = await session.execute(statement, {**params, "lo": lo, "hi": hi, "wanted": wanted - len(found)})
        found.extend((int(idx), float(score)) for idx, score in rows)
        if len(found) >= wanted:
            break
    return found


async def search(session: AsyncSession, filters: Filters, total: int, limit: int) -> list[tuple[int, float]]:
    """The best ``limit`` of the newest RECALL_CANDIDATES matches: (index, score), best first
    (ties: newer first). ``total`` is the chat's message count."""
    lexemes = list((await session.execute(_PREPARE, {"query": filters.query})).one()[1] or [])
    found: list[tuple[int, float]] = []
    if lexemes:  # emoji and punctuation make none
        found = await _newest(session, filters, total, RECALL_CANDIDATES, lexemes)
    if not found and filters.pattern is not None:
        # Full-text found nothing in the whole chat: a fragment, a name part, emoji.
        found = await _newest(session, filters, total, RECALL_CANDIDATES, None)
    found.sort(key=lambda hit: (-hit[1], -hit[0]))
    return found[:limit]
