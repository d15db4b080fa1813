"""The retrieval side of bench/fidelity.py: which words of a question are searched for, and the
plain BM25 ranking any search should beat.

The rule (fixed, printed with the figures): the question's words, lower-cased, a possessive
"'s" dropped, without stopwords and without words under 3 letters, in the order they come,
each once. "Where will max's sibling tie the knot?" searches "max sibling tie knot".

The BM25 baseline ranks the chat's messages (as logged so far, an erased person's gone) by
those words, with the usual k1 = 1.2, b = 0.75; each message's text is its speaker's name and
its words, stemmed lightly (a few English suffixes cut). It is computed here, independent of
the engine's search.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

QUERY_RULE = (
    "the question's words, lower-cased, possessive 's dropped, without stopwords and words "
    "under 3 letters, each once"
)
STOPWORDS = frozenset(
    str.split(
        """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other others our ours
    ourselves out over own same she should so some such than that the their theirs them themselves
    then there these they this those through to too under until up very was we were what when
    where which while who whom whose why will with would you your yours yourself yourselves us
    according told tell here said says say"""
    )
)
K1, B = 1.2, 0.75
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_SUFFIXES = ("ings", "ing", "edly", "ed", "ies", "es", "ly", "s")


def query_words(question: str) -> list[str]:
    """The words ``recall`` is given for a question (QUERY_RULE)."""
    words: list[str] = []
    for raw in _WORD.findall(question.casefold()):
        word = raw.removesuffix("'s")
        if len(word) < 3 or word in STOPWORDS or word in words:
            continue
        words.append(word)
    return words


def stem(word: str) -> str:
    """A light English stem: the first listed suffix that leaves 3+ letters is cut."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    return [stem(w.removesuffix("'s")) for w in _WORD.findall(text.casefold())]


class Bm25:
    """An inverted index over the chat as it grows; messages can leave (an erasure)."""

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = defaultdict(dict)
        self.lengths: dict[int, int] = {}
        self.by_author: dict[str, list[int]] = defaultdict(list)
        self.total_length = 0

    def add(self, index: int, author: str, text: str) -> None:
        counts = Counter(terms(f"{author} {text}"))
        for term, count in counts.items():
            self.postings[term][index] = count
        length = sum(counts.values())
        self.lengths[index] = length
        self.total_length += length
        self.by_author[author].append(index)

    def remove_author(self, author: str) -> None:
        for index in self.by_author.pop(author, []):
            length = self.lengths.pop(index, None)
            if length is None:
                continue
            self.total_length -= length
        for term in list(self.postings):
            posting = self.postings[term]
            for index in [i for i in posting if i not in self.lengths]:
                del posting[index]

    def rank(self, words: list[str], limit: int = 10) -> list[int]:
        """The ``limit`` best messages for ``words``, best first (ties: newer first)."""
        count = len(self.lengths)
        if not count:
            return []
        average = self.total_length / count
        scores: dict[int, float] = defaultdict(float)
        for term in {stem(w) for w in words}:
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (count - len(posting) + 0.5) / (len(posting) + 0.5))
            for index, tf in posting.items():
                norm = tf + K1 * (1 - B + B * self.lengths[index] / average)
                scores[index] += idf * tf * (K1 + 1) / norm
        return sorted(scores, key=lambda index: (-scores[index], -index))[:limit]
