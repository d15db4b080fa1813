"""The search behind `recall`: a message is found when it shares words with the query, and
ranked by how many and how rare (memory/reading/ranking.py), newest matches first in a window
that widens until every word of the query has enough of them.

Words as the chat's configuration reads them (stemmed in its language, accents folded, the
author's name with the text: migrations/versions/0010_ranked_recall.py). Every query word is
looked for on its own (an OR): a word the chat never used costs a few index lookups and takes
nothing away from the others.

Why windows: a common word ("that") matches ~10% of a chat. Collecting every match before
keeping the newest read the heap page of each (125,028 matches of "the" in a measured
415,000-message copy; recall p95 1,224 ms on 1M messages, docs/benchmarks.md). Each statement
reads the newest matches of ``[lo, hi)`` for the words still wanted, at most PER_WORD per word;
a word with PER_WORD matches in hand drops out of the next, wider window (its frequency in the
part read stands for the chat's). A common word is done in the first window; a rare word is
followed to the chat's first message, where its count is exact.

Full-text first; trigrams (ILIKE) only as a fallback, when no word of the query matched in the
whole chat (a fragment such as "padd", emoji, "%").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.reading.ranking import Candidate, Ranked, rank

# The trigram fallback ranks at most this many of its newest matches by similarity():
# over 2,000 rows it cost 22 ms by itself; 200 rows ~2 ms.
RECALL_CANDIDATES = 200
# Newest matches kept per query word before it stops widening: with a 3-6 word query that is
# 300-600 candidates, 15-30x the largest `limit` (20); a word in >= 10% of messages has them
# in the first 1,024 messages.
PER_WORD = 100
# A lexeme's search starts where its share of messages (ANALYZE's) puts twice PER_WORD matches.
REACH_MARGIN = 2.0
FIRST_WINDOW = 4096  # the trigram fallback's first window (fragments are rare)
# Each window is this many times the one before: a fragment absent from the chat costs
# log4(1M / 4,096) + 1 = 5 index lookups on a 1M-message chat instead of 9 when doubling.
WIDEN = 4


@dataclass(frozen=True, slots=True)
class Filters:
    chat_id: int
    query: str  # whitespace-normalised, storable
    pattern: str | None  # ILIKE pattern for the trigram fallback; None: no fallback
    author: str | None  # ILIKE pattern on the author's name
    author_id: int | None


@dataclass(frozen=True, slots=True)
class Found:
    """One hit: the message, its place in the ranking's tiers (ranking.PHRASE, ALL_WORDS,
    SOME_WORDS; the trigram fallback's are SOME_WORDS), its score, and the query's words it holds."""

    index: int
    tier: int
    score: float
    words: tuple[str, ...]
    every_word: bool


def windows(total: int, first: int = FIRST_WINDOW, factor: int = WIDEN) -> Iterator[tuple[int, int]]:
    """``[lo, hi)`` slices of ``[0, total)`` from the newest, each ``factor`` times the one
    before (``first`` messages first), together covering every index exactly once."""
    hi, size = total, first
    while hi > 0:
        lo = max(0, hi - size)
        yield lo, hi
        hi, size = lo, size * factor


def tsquery_literal(lexeme: str) -> str:
    """``lexeme`` as tsquery input: quoted, its quotes doubled and backslashes escaped."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


# How the chat is named decides which index finds it. Within a window, the fast plan ANDs the
# words' GIN bitmap with the primary-key range of the window, so only the window's matches
# reach the heap. PostgreSQL does not AND two indexes that both use "chat_id = $1" (the same
# clause), and btree_gin would take it with an int8 parameter: the GIN scan then returned the
# chat's every match (6,342 for "packages"), read from the heap each window (20-80 ms). As an
# int4, btree_gin cannot use it (no cross-type operators) and the primary key can. The window
# that reaches the chat's first message has no range to AND with: there the chat-led GIN
# index keeps a small chat clear of a big chat's matches.
_CHAT_IN_RANGE = "m.chat_id = CAST(:chat_id AS integer)"
_CHAT_WHOLE = "m.chat_id = :chat_id"
_INT4_MAX = 2**31 - 1

# Custom plans for these words and this window, every time: after five runs of a statement
# PostgreSQL may settle on a generic plan, which cannot tell a word in 1 of 100,000 messages
# from one in 1 of 10 (measured with generic plans: p95 1,021 ms). In the same round trip:
# each query word's lexemes in the chat's configuration, the query as a phrase, how common
# each lexeme is (ANALYZE's most common elements of tsv, with their share of messages), whether
# the configuration stems, and each word's lexemes as typed (eva_simple: accents folded only).
_PREPARE = text("""
    WITH chat AS (
        SELECT coalesce(search_config, 'eva_simple'::regconfig) AS config FROM chats WHERE id = :chat_id
    ), words AS (
        SELECT w.n, tsvector_to_array(to_tsvector(chat.config, w.word)) AS lexemes
        FROM chat, unnest(CAST(:words AS text[])) WITH ORDINALITY AS w(word, n)
    ), stats AS (
        SELECT CAST(CAST(s.most_common_elems AS text) AS text[]) AS elems, s.most_common_elem_freqs AS freqs
        FROM pg_stats s
        WHERE s.schemaname = current_schema() AND s.tablename = 'messages' AND s.attname = 'tsv'
    )
    SELECT set_config('plan_cache_mode', 'force_custom_plan', true),
           ARRAY(SELECT array_to_string(words.lexemes, ' ') FROM words ORDER BY words.n),
           phraseto_tsquery(chat.config, :query)::text,
           ARRAY(SELECT e.elem || ' ' || e.freq::text
                 FROM stats, unnest(stats.elems, stats.freqs[1:cardinality(stats.elems)]) AS e(elem, freq)
                 WHERE e.elem IN (SELECT unnest(words.lexemes) FROM words)),
           chat.config <> 'eva_simple'::regconfig,
           ARRAY(SELECT array_to_string(tsvector_to_array(to_tsvector('eva_simple', w.word)), ' ')
                 FROM unnest(CAST(:words AS text[])) WITH ORDINALITY AS w(word, n) ORDER BY w.n),
           (SELECT c.reltuples FROM pg_class c WHERE c.oid = CAST('messages' AS regclass))
    FROM chat
""")

# A chat this many times smaller than the messages table (ANALYZE's row count) is searched
# through the chat-led index alone, in one statement from its first message. Measured on 1M
# messages of one chat and 10,000 of another: the table-wide index gives a common lexeme's
# bitmap at ~0.12 us a posting ("file": 26,512 in 3.1 ms, for every chat), the chat-led one
# only the small chat's matches, read from the heap at ~5 us each; the small chat's way is
# cheaper while it holds under 0.12 / 5 = 1/40 of the table.
CHAT_LED_RATIO = 40


@cache
def _ranked_statement(
    whole: tuple[bool, ...], by_author: bool, by_author_id: bool, phrase: bool, stemmed: bool
) -> TextClause:
    """The newest matches of each lexeme ``k`` in ``[lo_k, hi_k)``, at most ``cap`` each, in one
    statement; each found message once, with the subqueries that found it, the query lexemes
    it holds and (``stemmed``) the query's words it holds as typed. ``whole[k]``: lexeme k's
    range starts at the chat's first message."""
    extra = ""
    if by_author:
        extra += " AND m.author_name ILIKE :author"
    if by_author_id:
        extra += " AND m.author_id = :author_id"
    parts = [
        f"""(SELECT {k} AS k, m.idx FROM messages m
            WHERE {_CHAT_WHOLE if every else _CHAT_IN_RANGE} AND m.idx >= :lo_{k} AND m.idx < :hi_{k}
              AND m.text IS NOT NULL AND m.tsv @@ CAST(:lexeme_{k} AS tsquery){extra}
            ORDER BY m.idx DESC LIMIT :cap)"""
        for k, every in enumerate(whole)
    ]
    holds_phrase = "m.tsv @@ CAST(:phrase AS tsquery)" if phrase else "false"
    # Only the found messages are read again as typed: a few hundred short texts, ~1 ms.
    as_typed = (
        "ARRAY(SELECT x FROM unnest(tsvector_to_array(to_tsvector('eva_simple', "
        "coalesce(m.text, '') || ' ' || coalesce(m.author_name, '')))) AS x "
        "WHERE x = ANY(CAST(:typed AS text[])))"
        if stemmed
        else "NULL"
    )
    return text(f"""
        WITH found AS ({" UNION ALL ".join(parts)}),
        hits AS (SELECT idx, array_agg(k) AS ks FROM found GROUP BY idx)
        SELECT h.idx, h.ks, cardinality(regexp_split_to_array(m.text, '[^[:alnum:]]+')) + 1,
               held.lexemes, held.counts, {holds_phrase}, {as_typed}
        FROM hits h
        JOIN messages m ON m.chat_id = :chat_id AND m.idx = h.idx
        CROSS JOIN LATERAL (
            SELECT array_agg(u.lexeme) AS lexemes, array_agg(cardinality(u.positions)) AS counts
            FROM unnest(m.tsv) AS u WHERE u.lexeme = ANY(CAST(:lexemes AS text[]))
        ) AS held
    """)


@cache
def _trigram_statement(by_author: bool, by_author_id: bool, in_range: bool) -> TextClause:
    """One window's newest matches of the ILIKE pattern, scored on the LIMITed rows only."""
    where = [_CHAT_IN_RANGE if in_range else _CHAT_WHOLE, "m.text ILIKE :pattern"]
    if by_author:
        where.append("m.author_name ILIKE :author")
    if by_author_id:
        where.append("m.author_id = :author_id")
    return text(f"""
        WITH hits AS (
            SELECT m.idx, m.text
            FROM messages m
            WHERE m.idx >= :lo AND m.idx < :hi AND m.text IS NOT NULL AND {" AND ".join(where)}
            ORDER BY m.idx DESC
            LIMIT :wanted
        )
        SELECT h.idx, similarity(h.text, :query) FROM hits h
    """)


def _filter_params(filters: Filters) -> dict[str, object]:
    params: dict[str, object] = {"chat_id": filters.chat_id, "query": filters.query}
    if filters.author is not None:
        params["author"] = filters.author
    if filters.author_id is not None:
        params["author_id"] = filters.author_id
    return params


def _in_range(filters: Filters, lo: int) -> bool:
    return lo > 0 and filters.chat_id <= _INT4_MAX


def first_reach(total: int, share: float | None) -> int:
    """Where a lexeme's search starts: far enough back from the newest message to hold
    PER_WORD of its matches twice over at its share of messages (``share``, from ANALYZE), the
    whole chat for a word rarer than ANALYZE lists (under ~0.1% of messages)."""
    if not share:
        return 0
    return max(0, total - int(PER_WORD * REACH_MARGIN / share))


async def _candidates(
    session: AsyncSession,
    filters: Filters,
    total: int,
    lexemes: Sequence[str],
    shares: dict[str, float],
    phrase: str | None,
    typed: Mapping[str, frozenset[str]] | None,
    chat_led: bool = False,
) -> tuple[list[Candidate], dict[str, float]]:
    """The newest PER_WORD matches of each lexeme (more where they share messages) and each
    lexeme's document frequency: counted where every match was read, else estimated from the
    part read. One statement; a second, over the rest of the chat, for the lexemes that came
    short in the part their share pointed at (a word more common elsewhere than here).
    ``typed``: each lexeme's forms as the query typed them, for a chat whose words are stemmed.
    ``chat_led``: a small chat of a big table, read whole through its own index (CHAT_LED_RATIO)."""
    params = {**_filter_params(filters), "lexemes": list(lexemes), "phrase": phrase, "cap": PER_WORD}
    if typed is not None:
        params["typed"] = sorted(set().union(*typed.values()))
    by_author, by_author_id = filters.author is not None, filters.author_id is not None
    seen: dict[int, Candidate] = {}
    counts: Counter[str] = Counter()
    frequencies: dict[str, float] = {}
    ranges = {
        lexeme: (0 if chat_led else first_reach(total, shares.get(lexeme)), total) for lexeme in lexemes
    }
    while ranges:
        wanted = list(ranges)
        whole = tuple(ranges[lexeme][0] == 0 or filters.chat_id > _INT4_MAX for lexeme in wanted)
        window: dict[str, object] = {}
        for k, lexeme in enumerate(wanted):
            window |= {f"lo_{k}": ranges[lexeme][0], f"hi_{k}": ranges[lexeme][1]}
            window[f"lexeme_{k}"] = tsquery_literal(lexeme)
        statement = _ranked_statement(whole, by_author, by_author_id, phrase is not None, typed is not None)
        found: Counter[int] = Counter()
        oldest: dict[int, int] = {}
        rows = await session.execute(statement, {**params, **window})
        for idx, ks, length, held, tf, holds_phrase, as_typed in rows:
            held_counts = dict(zip(held or (), tf or (), strict=True))
            exact = _held_as_typed(held_counts, typed, as_typed)
            seen[int(idx)] = Candidate(int(idx), int(length), held_counts, bool(holds_phrase), exact)
            for k in ks:
                found[k] += 1
                oldest[k] = min(oldest.get(k, idx), idx)
        short: dict[str, tuple[int, int]] = {}
        for k, lexeme in enumerate(wanted):
            counts[lexeme] += found[k]
            lo = ranges[lexeme][0]
            if found[k] >= PER_WORD:  # the newest PER_WORD: its share of the part read
                frequencies[lexeme] = counts[lexeme] * total / max(total - oldest[k], 1)
            elif lo == 0:  # every match of the chat read: counted
                frequencies[lexeme] = float(counts[lexeme])
            else:
                short[lexeme] = (0, lo)
        ranges = short
    return list(seen.values()), frequencies


async def _trigram(session: AsyncSession, filters: Filters, total: int, limit: int) -> list[Found]:
    """The best ``limit`` of the pattern's newest RECALL_CANDIDATES matches, by similarity."""
    params = {**_filter_params(filters), "pattern": filters.pattern}
    by_author, by_author_id = filters.author is not None, filters.author_id is not None
    found: list[tuple[int, float]] = []
    # With an author, no windows: the author's index and the pattern's, ANDed over the whole
    # chat, read only the author's matches.
    for lo, hi in windows(total, total if by_author else FIRST_WINDOW):
        statement = _trigram_statement(by_author, by_author_id, _in_range(filters, lo))
        left = RECALL_CANDIDATES - len(found)
        rows = await session.execute(statement, {**params, "lo": lo, "hi": hi, "wanted": left})
        found.extend((int(idx), float(score)) for idx, score in rows)
        if len(found) >= RECALL_CANDIDATES:
            break
    found.sort(key=lambda hit: (-hit[1], -hit[0]))
    return [Found(idx, 0, score, (), False) for idx, score in found[:limit]]


def _held_as_typed(
    held: Mapping[str, int], typed: Mapping[str, frozenset[str]] | None, as_typed: Sequence[str] | None
) -> frozenset[str]:
    """The held lexemes whose query word the message also holds as typed (every one when the
    chat does not stem: its lexemes are the words as typed)."""
    if typed is None:
        return frozenset(held)
    forms = set(as_typed or ())
    return frozenset(lexeme for lexeme in held if typed.get(lexeme, frozenset()) & forms)


def _words_held(words: Sequence[str], word_lexemes: Sequence[str], hit: Ranked) -> tuple[str, ...]:
    """The query's words (as typed, without their punctuation) whose lexemes the hit holds."""
    held = []
    for word, lexemes in zip(words, word_lexemes, strict=True):
        if lexemes and hit.lexemes & set(lexemes.split()):
            held.append(word.strip(".,;:!?¿¡\"'()[]{}<>“”‘’«»"))
    return tuple(dict.fromkeys(held))


def _typed_forms(word_lexemes: Sequence[str], word_forms: Sequence[str]) -> dict[str, frozenset[str]]:
    """Each stemmed lexeme's forms as the query typed them (folded): "races" gives race -> {races}."""
    typed: dict[str, set[str]] = {}
    for lexemes, forms in zip(word_lexemes, word_forms, strict=True):
        for lexeme in lexemes.split():
            typed.setdefault(lexeme, set()).update(forms.split())
    return {lexeme: frozenset(forms) for lexeme, forms in typed.items()}


async def search(session: AsyncSession, filters: Filters, total: int, limit: int) -> list[Found]:
    """The best ``limit`` matches, best first (ties: newer first). ``total`` is the chat's
    message count."""
    words = filters.query.split()
    row = (await session.execute(_PREPARE, {**_filter_params(filters), "words": words})).one_or_none()
    word_lexemes: list[str] = list(row[1]) if row is not None else []
    lexemes = list(dict.fromkeys(lex for per_word in word_lexemes for lex in per_word.split()))
    if lexemes and row is not None:  # emoji and punctuation make none
        phrase = row[2] if len(lexemes) > 1 and row[2] else None
        shares = {elem: float(share) for elem, share in (pair.rsplit(" ", 1) for pair in row[3] or ())}
        typed = _typed_forms(word_lexemes, list(row[5] or ())) if row[4] else None
        table_rows = float(row[6] or 0)  # -1 or 0 before the table's first ANALYZE: not known
        chat_led = 0 < total * CHAT_LED_RATIO <= table_rows
        candidates, frequencies = await _candidates(
            session, filters, total, lexemes, shares, phrase, typed, chat_led
        )
        if candidates:
            every = frozenset(lexemes)
            ranked = rank(candidates, frequencies, total, limit, stemmed=typed is not None)
            held = [_words_held(words, word_lexemes, hit) for hit in ranked]
            return [
                Found(hit.index, hit.tier, hit.score, shown, every <= hit.lexemes)
                for hit, shown in zip(ranked, held, strict=True)
            ]
    if filters.pattern is not None:
        # No word matched in the whole chat: a fragment, a name part, emoji.
        return await _trigram(session, filters, total, limit)
    return []
