"""The planted facts of bench/fidelity.py: short messages inserted into a real corpus by people
active in that stretch, at known positions, each with a probe (question, expected value, the
person to credit).

Kinds (each reported apart):

- ``single``: a fact stated once ("we adopted a puppy, his name is Biscuit"); the question asks
  for the value about its author ("What is max's new dog called?");
- ``attribution``: the same kind of fact; the question names the value and asks who
  ("Whose dog answers to Biscuit?"): the expected value is the author's name;
- ``update``: the author states a value, then changes it later; the newest must win (the
  probe's message is the later one);
- ``about``: someone says a fact about another active person; the question asks about the
  other person and who said so (credit: the one who said it);
- ``erased``: a fact by a person who erases themselves later (the engine's own erasure,
  bench/fidelity_measure.py); the probe must find nothing.

Questions paraphrase the message (other content words, except the person's name and, for
"who" questions, the value), as real questions do. Values are unique in the run and absent from
the corpus slice, so a value found anywhere is the planted one. Every author gets a stable
numeric id (as an author-id map gives an import), which erasure by id needs. Deterministic by
seed.
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from bench.fidelity_templates import ABOUT_QUESTION, OVERFLOW, TEMPLATES, Template
from memory import ImportedMessage

KINDS = ("single", "attribution", "update", "about", "erased")
ACTIVE_WINDOW = 400  # messages either side of a position in which a person counts as active
ACTIVE_MESSAGES = 3  # ... with at least this many messages there
FACTS_PER_ERASED_PERSON = 4  # an erased person plants this many facts, then erases themselves

# Letters NFKD does not split into a base letter and a mark ("Tromsø" is written "Tromso" too).
_PLAIN_LETTERS = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ß": "ss", "ł": "l", "đ": "d", "ı": "i"})


def normalise(text: str) -> str:
    """Case, accents and punctuation folded away, words separated by one space: how an answer
    is matched against an expected value or name."""
    folded = unicodedata.normalize("NFKD", text.casefold().translate(_PLAIN_LETTERS))
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return " ".join(re.findall(r"[^\W_]+", plain))


def contains(text: str, wanted: str) -> bool:
    """``wanted`` (normalised) appears in ``text`` (normalised) as whole words."""
    needle = normalise(wanted)
    return bool(needle) and f" {needle} " in f" {normalise(text)} "


def author_id(name: str) -> int:
    """A stable id per author name, as an author-id map gives an import (erasure goes by id)."""
    return int.from_bytes(hashlib.sha256(f"fidelity|{name}".encode()).digest()[:6], "big") + 1


@dataclass(frozen=True)
class Probe:
    kind: str
    question: str
    expected: str  # the value (normalised on matching); for attribution, the person's name
    credit: str  # the person the answer must name
    planted: int  # log index of the message that answers it (an update: the newer one)
    ask_after: int  # asked once message ``ask_after`` is logged
    author: str  # who wrote the planted message
    template: str
    value: str = ""  # the fact's value (an attribution question names it; the others ask for it)
    older: int | None = None  # an update's first message
    subject: str | None = None  # the person an "about" fact is about


@dataclass
class Planted:
    records: list[ImportedMessage]  # the corpus slice with the planted messages, in order
    probes: list[Probe]
    # After which log index who erases themselves: index -> [(author id, name)].
    erasures: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    planted_indexes: set[int] = field(default_factory=set)


@dataclass
class _Insert:
    before: int  # original position it goes before
    author: str
    text: str
    key: tuple[int, str]  # (fact number, role): "said", "update"


def _people(records: Sequence[ImportedMessage]) -> list[str]:
    return [r.author_name for r in records]


NICK = re.compile(r"[\w\-\[\]\\^{}|`]{3,32}")  # an IRC or Discord name, not a topic line or a system author


def active_people(authors: Sequence[str], bots: set[str], at: int) -> list[str]:
    """People with ACTIVE_MESSAGES or more messages within ACTIVE_WINDOW of ``at`` (sorted)."""
    window = Counter(authors[max(0, at - ACTIVE_WINDOW) : at + ACTIVE_WINDOW])
    return sorted(
        name
        for name, count in window.items()
        if count >= ACTIVE_MESSAGES
        and name not in bots
        and NICK.fullmatch(name)
        and len(normalise(name)) >= 3
    )


class _Values:
    """Each template's values, drawn without repeats across the run, none found in the corpus."""

    def __init__(self, corpus_text: str, rng: random.Random) -> None:
        self.used: set[str] = set()
        self.pools: dict[str, list[str]] = {}
        for template in TEMPLATES:
            pool = [v for v in template.values if f" {normalise(v)} " not in corpus_text]
            rng.shuffle(pool)
            extra = [v for v in OVERFLOW.get(template.key, ()) if f" {normalise(v)} " not in corpus_text]
            random.Random(f"overflow|{template.key}").shuffle(extra)
            self.pools[template.key] = extra + pool  # taken from the end: the template's own first

    def take(self, template: Template) -> str | None:
        pool = self.pools[template.key]
        while pool:
            value = pool.pop()
            if normalise(value) not in self.used:
                self.used.add(normalise(value))
                return value
        return None


def _draw(
    rng: random.Random, values: _Values, pairs: set[tuple[str, str]], person: str
) -> tuple[Template, str] | None:
    """A template this person has no fact of yet, and a fresh value of it."""
    for template in rng.sample(TEMPLATES, len(TEMPLATES)):
        if (person, template.key) in pairs:
            continue
        value = values.take(template)
        if value is not None:
            pairs.add((person, template.key))
            return template, value
    return None


@dataclass
class _Draft:
    """What the generator has decided so far, before the records are merged."""

    records: Sequence[ImportedMessage]
    rng: random.Random
    values: _Values
    authors: list[str]
    bots: set[str]
    inserts: list[_Insert] = field(default_factory=list)
    specs: list[dict[str, object]] = field(default_factory=list)
    pairs: set[tuple[str, str]] = field(default_factory=set)  # (person, template): one fact each
    erased_people: set[str] = field(default_factory=set)
    erasures: list[tuple[int, str]] = field(default_factory=list)  # (original position, name)
    leaves: dict[str, int] = field(default_factory=dict)  # erased person -> gone from this position

    @property
    def span(self) -> tuple[int, int]:
        """Where facts are planted: after the first 2% (someone has spoken) and before the last
        15% (so most probes are asked a while later)."""
        n = len(self.records)
        return max(1, n // 50), max(2, (n * 17) // 20)

    def said(self, at: int, person: str, text: str, role: str = "said") -> None:
        self.inserts.append(_Insert(at, person, text, (len(self.specs), role)))


def plant(records: Sequence[ImportedMessage], facts: int, seed: int = 1) -> Planted:
    """``facts`` planted facts over ``records`` (the corpus slice), their kinds in turn."""
    rng = random.Random(seed)
    corpus_text = " " + " ".join(normalise(r.content) for r in records) + " "
    draft = _Draft(
        records,
        rng,
        _Values(corpus_text, rng),
        _people(records),
        {r.author_name for r in records if r.is_bot},
    )
    kinds = [KINDS[k % len(KINDS)] for k in range(facts)]
    # The erased first: their people are then kept out of every other fact.
    _plant_erased(draft, kinds.count("erased"))
    _plant_others(draft, [kind for kind in kinds if kind != "erased"])
    return _assemble(draft)


def _plant_erased(draft: _Draft, count: int) -> None:
    """``count`` facts by people who each plant up to FACTS_PER_ERASED_PERSON, then erase
    themselves a little later and say nothing more."""
    lo, hi = draft.span
    n, rng = len(draft.records), draft.rng
    for _ in range(20 * count):  # bounded: a corpus with too few people yields fewer facts
        if count <= 0 or hi - lo <= 10:
            return
        centre = rng.randrange(lo, hi)
        active = active_people(draft.authors, draft.bots, centre)
        candidates = [p for p in active if p not in draft.erased_people]
        if not candidates:
            continue
        person = rng.choice(candidates)
        draft.erased_people.add(person)
        last = centre
        for j in range(min(FACTS_PER_ERASED_PERSON, count)):
            drawn = _draw(rng, draft.values, draft.pairs, person)
            if drawn is None:
                continue
            template, value = drawn
            at = min(n - 1, centre + j * (ACTIVE_WINDOW // 2) // FACTS_PER_ERASED_PERSON)
            last = max(last, at)
            draft.said(at, person, template.said.format(value=value))
            draft.specs.append({"kind": "erased", "t": template, "value": value, "author": person})
            count -= 1
        gone = min(n, last + rng.randrange(20, 200))
        draft.erasures.append((gone, person))
        draft.leaves[person] = gone


def _later_position(draft: _Draft, person: str, at: int) -> int | None:
    """Where ``person``, active again, changes a value they stated at ``at``: 5-20% of the
    corpus later; None when they are not active at any of the places tried."""
    n, rng = len(draft.records), draft.rng
    for _ in range(20):
        later = min(n - 1, at + rng.randrange(max(2, n // 20), max(3, n // 5)))
        if person in active_people(draft.authors, draft.bots, later):
            return later
    return None


def _plant_others(draft: _Draft, kinds: list[str]) -> None:
    lo, hi = draft.span
    rng = draft.rng
    wanted = list(kinds)
    for _ in range(20 * len(kinds)):  # bounded: a tiny corpus yields fewer facts
        if not wanted:
            return
        kind = wanted[0]
        at = rng.randrange(lo, hi)
        people = [p for p in active_people(draft.authors, draft.bots, at) if p not in draft.erased_people]
        if len(people) < 2:
            continue
        person = rng.choice(people)
        drawn = _draw(rng, draft.values, draft.pairs, person)
        if drawn is None:
            continue
        template, value = drawn
        spec: dict[str, object] = {"kind": kind, "t": template, "value": value, "author": person}
        if kind == "update":
            newer = draft.values.take(template)
            if newer is None:
                continue
            later = _later_position(draft, person, at)
            if later is None:
                continue
            draft.said(later, person, template.update.format(value=newer, old=value), "update")
            spec["newer"] = newer
        if kind == "about":
            subject = rng.choice([p for p in people if p != person])
            spec["subject"] = subject
            draft.said(at, person, template.about.format(subject=subject, value=value))
        else:
            draft.said(at, person, template.said.format(value=value))
        draft.specs.append(spec)
        wanted.pop(0)


def _assemble(draft: _Draft) -> Planted:
    """The merged records (planted messages before their original positions; an erased person's
    own messages after they left are dropped), every author with its id, and the probes."""
    records, specs, inserts, erasures, leaves = (
        draft.records,
        draft.specs,
        draft.inserts,
        draft.erasures,
        draft.leaves,
    )
    by_position: dict[int, list[_Insert]] = {}
    for insert in inserts:
        by_position.setdefault(insert.before, []).append(insert)
    erase_at: dict[int, list[str]] = {}
    for position, name in erasures:
        erase_at.setdefault(position, []).append(name)
    merged: list[ImportedMessage] = []
    index_of: dict[tuple[int, str], int] = {}
    erase_after: dict[int, list[tuple[int, str]]] = {}
    for position, record in enumerate(records):
        for insert in by_position.get(position, []):
            index_of[insert.key] = len(merged)
            merged.append(
                replace(
                    record,
                    author_name=insert.author,
                    author_id=author_id(insert.author),
                    is_bot=False,
                    content=insert.text,
                    attachments=(),
                    reply_to_source=None,
                    source_id=f"planted:{insert.key[0]}:{insert.key[1]}",
                    snowflake=None,
                    edited_at=None,
                    mentions=(),
                )
            )
        for name in erase_at.get(position, []):
            erase_after.setdefault(len(merged) - 1, []).append((author_id(name), name))
        if record.author_name in leaves and position >= leaves[record.author_name]:
            continue  # they erased themselves and left the chat
        merged.append(replace(record, author_id=author_id(record.author_name)))
    for position, name in erasures:  # an erasure at the very end
        if position >= len(records):
            erase_after.setdefault(len(merged) - 1, []).append((author_id(name), name))
    end = len(merged) - 1
    erased_at = {name: after for after, people in erase_after.items() for _, name in people}
    probes: list[Probe] = []
    for number, spec in enumerate(specs):
        kind, template = str(spec["kind"]), spec["t"]
        assert isinstance(template, Template)
        value, author = str(spec["value"]), str(spec["author"])
        planted = index_of[(number, "said")]
        older = None
        if kind == "update":
            older, planted = planted, index_of[(number, "update")]
            value = str(spec["newer"])
        last = erased_at[author] if kind == "erased" else planted
        ask_after = draft.rng.randrange(min(end, last + 1), end + 1)
        if kind == "attribution":
            question, expected, credit = template.who.format(value=value), author, author
        elif kind == "about":
            subject = str(spec["subject"])
            inner = template.question.format(person=subject)
            question = ABOUT_QUESTION.format(question=inner[0].lower() + inner[1:])
            expected, credit = value, author
        else:
            question, expected, credit = template.question.format(person=author), value, author
        probes.append(
            Probe(
                kind,
                question,
                expected,
                credit,
                planted,
                ask_after,
                author,
                template.key,
                value=value,
                older=older,
                subject=str(spec["subject"]) if kind == "about" else None,
            )
        )
    planted_indexes = {index for index in index_of.values()}
    return Planted(merged, probes, erase_after, planted_indexes)
