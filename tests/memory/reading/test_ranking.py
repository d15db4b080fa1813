"""Recall's ranking, pure: BM25 by hand, phrase and every-word tiers, ties newer first."""

from __future__ import annotations

import math

from memory.reading.ranking import ALL_WORDS, PHRASE, SOME_WORDS, Candidate, rank


def test_bm25_weighs_a_rare_word_over_a_common_one() -> None:
    total = 1000
    rare = Candidate(1, 10, {"zyzzyva": 1})
    common = Candidate(2, 10, {"the": 1})
    ranked = rank([rare, common], {"zyzzyva": 2, "the": 500}, total, 5)
    assert [r.index for r in ranked] == [1, 2]
    # By hand: idf = ln(1 + (N - df + .5) / (df + .5)); at average length tf=1 gives idf * 2.2 / 2.2.
    assert math.isclose(ranked[0].score, math.log(1 + (1000 - 2 + 0.5) / 2.5))
    assert math.isclose(ranked[1].score, math.log(1 + (1000 - 500 + 0.5) / 500.5))


def test_phrase_then_every_word_then_some_and_ties_newer_first() -> None:
    freq = {"padel": 10, "saturday": 10, "gothia": 10}
    some = Candidate(9, 3, {"padel": 3, "gothia": 3})  # more occurrences, still partial
    every = Candidate(5, 20, {"padel": 1, "saturday": 1, "gothia": 1})
    phrase = Candidate(4, 30, {"padel": 1, "saturday": 1, "gothia": 1}, phrase=True)
    twin = Candidate(6, 20, {"padel": 1, "saturday": 1, "gothia": 1})
    ranked = rank([some, every, phrase, twin], freq, 1000, 10)
    assert [(r.index, r.tier) for r in ranked] == [
        (4, PHRASE),
        (6, ALL_WORDS),
        (5, ALL_WORDS),
        (9, SOME_WORDS),
    ]


def test_a_word_the_chat_lacks_does_not_keep_a_message_from_having_every_word() -> None:
    ranked = rank([Candidate(1, 5, {"wedding": 1})], {"wedding": 3, "zanzibar": 0}, 100, 5)
    assert ranked[0].tier == ALL_WORDS
    assert rank([], {"wedding": 3}, 100, 5) == []


def test_a_short_message_outranks_a_long_one_with_the_same_words() -> None:
    ranked = rank([Candidate(1, 40, {"wedding": 1}), Candidate(2, 4, {"wedding": 1})], {"wedding": 5}, 100, 5)
    assert [r.index for r in ranked] == [2, 1]


def test_a_word_found_as_typed_outranks_a_shorter_message_holding_only_its_stem() -> None:
    # "race" asked; "switched races" (2 words + author = 3) holds it only through the stem, a
    # 13-word message holds "race" as typed. By hand, idf factored out, average length 8:
    # plain BM25 puts the short one first (2.2 / (1 + 1.2 * (.25 + .75 * 3/8)) = 1.34 against
    # 2.2 / (1 + 1.2 * (.25 + .75 * 13/8)) = 0.80); a stem-only match at half weight gives 0.67.
    short = Candidate(1, 3, {"race": 1})
    typed = Candidate(2, 13, {"race": 1}, exact=frozenset({"race"}))
    ranked = rank([short, typed], {"race": 20}, 3600, 5, stemmed=True)
    assert [r.index for r in ranked] == [2, 1]
    # A chat that does not stem has its words as typed: length decides again.
    assert [r.index for r in rank([short, typed], {"race": 20}, 3600, 5)] == [1, 2]
