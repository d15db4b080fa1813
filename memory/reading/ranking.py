"""Recall's ranking of the messages it found: BM25 over the query's words, with the messages
that hold the query as a phrase, then those that hold every word, above the rest.

Pure: the search (memory/reading/search.py) hands each candidate's matched lexemes and their
counts, and each lexeme's document frequency in the chat (counted where the search read every
match, estimated from the newest part it read where a word is common). BM25 (Robertson's
k1 = 1.2, b = 0.75): a word's weight is how rare it is, ln(1 + (N - df + 0.5) / (df + 0.5)), and
a repeat counts less than a first occurrence; a short message holding the words counts more
than a long one. A message's length is its words as written, stopwords included, plus one for
its author's name (the way BM25 counts a document; the lexemes alone made a chatty one-liner
as short as a sentence of facts, and bench.fidelity's hit@5 lower on 3 of 5 corpora).

A word found only through its stem counts STEM_ONLY of a word found as typed: "race" still finds
"switched races", but below a message holding "race" itself or the other words of the query.
Stemming alone put a stem-only match above the planted message on 4 of bench.fidelity's 20
kind-corpus pairs (snowball joins "race"/"races", "celebration"/"celebrate"), below the
benchmark's plain BM25, whose light suffix-cutting keeps them apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

K1 = 1.2
B = 0.75
PHRASE, ALL_WORDS, SOME_WORDS = 2, 1, 0  # tiers, best first
# The weight of a lexeme a message holds only in another form than the query's word: half, so
# that a stem-only match of a rare word (idf ~5 in a 3,600-message chat) no longer outweighs
# the asker's exact words (a name's idf ~3-4); bench.fidelity's hit@5 was measured at 0.5.
STEM_ONLY = 0.5


@dataclass(frozen=True, slots=True)
class Candidate:
    """One message the search found: its index, its length in words (its author's name one
    more), the query lexemes it holds with their counts, and whether it holds the query as a
    phrase."""

    index: int
    length: int
    counts: Mapping[str, int]
    phrase: bool = False
    exact: frozenset[str] = frozenset()  # the query's lexemes it also holds as typed


@dataclass(frozen=True, slots=True)
class Ranked:
    index: int
    tier: int
    score: float
    lexemes: frozenset[str]


def idf(df: float, total: int) -> float:
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def rank(
    candidates: Sequence[Candidate],
    frequencies: Mapping[str, float],
    total: int,
    limit: int,
    *,
    stemmed: bool = False,
) -> list[Ranked]:
    """The best ``limit`` candidates, best first: phrase, then every word the chat holds, then
    by BM25; ties newer first. ``frequencies``: each query lexeme's df (0: not in the chat).
    ``stemmed``: the chat's words are stemmed, so a lexeme outside a candidate's ``exact``
    counts STEM_ONLY."""
    if not candidates:
        return []
    present = frozenset(lexeme for lexeme, df in frequencies.items() if df > 0)
    weights = {lexeme: idf(df, max(total, 1)) for lexeme, df in frequencies.items()}
    average = sum(c.length for c in candidates) / len(candidates) or 1.0
    ranked = []
    for c in candidates:
        norm = K1 * (1 - B + B * c.length / average)
        score = sum(
            weights.get(lex, 0.0) * _form(lex, c, stemmed) * tf * (K1 + 1) / (tf + norm)
            for lex, tf in c.counts.items()
        )
        held = frozenset(c.counts)
        tier = PHRASE if c.phrase else ALL_WORDS if present and present <= held else SOME_WORDS
        ranked.append(Ranked(c.index, tier, score, held))
    ranked.sort(key=lambda r: (-r.tier, -r.score, -r.index))
    return ranked[:limit]


def _form(lexeme: str, candidate: Candidate, stemmed: bool) -> float:
    return STEM_ONLY if stemmed and lexeme not in candidate.exact else 1.0
