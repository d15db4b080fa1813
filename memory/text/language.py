"""Which language a chat is written in, for recall's stemming (``eva_<language>`` text search
configurations, migrations/versions/0010_ranked_recall.py). Pure functions, no database.

The guess counts the most frequent function words of each language in a sample of the chat's
messages: a chat in English has ~25% of its words among "the, and, to, is, ...", and no other
language's list takes more than a few percent of them. Too few words, or no language clearly
ahead, and the answer is None: the chat stays ``eva_simple`` (accents folded, no stemming),
which finds the words as typed; a wrong stemmer would merge words that differ.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

# The snowball stemmers PostgreSQL 13-18 all ship; each is configuration eva_<name>.
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
SIMPLE = "eva_simple"

# Function words that mark each language and are rare in the others (the words two languages
# share, such as "en", "de", "in", "die", left out where they would blur the count).
_MARKER_WORDS = {
    "english": "the and is to of that it you for was with this have are not but what",
    "swedish": "och att det är som för på inte jag med har till av ett vad hur kan",
    "german": "und der das ist nicht ich ein mit sie auf für sich auch wie aber was",
    "french": "le la les et est une pas que je pour dans qui sur avec mais vous",
    "spanish": "el los las y es una que por para con pero como más está qué muy",
    "dutch": "het een en van ik niet dat zijn op voor met maar ook wat je",
    "italian": "il di che è non per una sono gli della ma anche come questo",
    "portuguese": "o os não uma para com mas como você isso está muito são",
    "norwegian": "og ikke jeg det som på er til med har av hva hvordan kan",
    "danish": "og ikke jeg det som på er til med har af hvad hvordan kan",
    "finnish": "ja on ei se että mutta kun niin minä sinä tämä mitä kuin",
    "russian": "и в не на что я с как это он но по так же",
}
_MARKERS = {language: frozenset(words.split()) for language, words in _MARKER_WORDS.items()}
_WORD = re.compile(r"[^\W\d_]+")
MIN_WORDS = 200  # below this the counts are noise
MIN_SHARE = 0.08  # of all words, among the winner's markers (English chat: ~0.25)
MIN_LEAD = 2.0  # the winner's count over the runner-up's (Swedish and Norwegian share many)


def guess_language(texts: Iterable[str]) -> str | None:
    """The language most of ``texts`` are written in, or None when unsure."""
    counts: Counter[str] = Counter()
    words = 0
    for text in texts:
        for word in _WORD.findall(text.lower()):
            words += 1
            for language, markers in _MARKERS.items():
                if word in markers:
                    counts[language] += 1
    if words < MIN_WORDS or not counts:
        return None
    ranked = counts.most_common(2)
    best, hits = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0
    if hits < MIN_SHARE * words or hits < MIN_LEAD * runner_up:
        return None
    return best


def config_for(language: str | None) -> str:
    """The text search configuration of ``language`` (None or unknown: eva_simple)."""
    return f"eva_{language}" if language in LANGUAGES else SIMPLE


def valid_language(name: str | None) -> str | None:
    """A server's choice: one of LANGUAGES, or "auto"/"" for the guess (None); ValueError else."""
    value = (name or "").strip().lower()
    if value in ("", "auto"):
        return None
    if value not in LANGUAGES:
        raise ValueError(f"unknown language {name!r}: choose one of {', '.join(LANGUAGES)}, or auto")
    return value
