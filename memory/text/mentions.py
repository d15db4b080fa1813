"""Mentions as names: Discord writes ``<@123>`` where a person sees "@alice"; the memory keeps
what people see, and the mentioned people's ids beside it (docs/design.md, the log).

Pure functions, no Discord and no database: the caller gathers the lookup tables (from the
guild's cache, the message's resolved mentions, REST, or an export's ``mentions`` list) and
this module turns text plus tables into the text the log stores.

- ``<@id>`` and ``<@!id>`` become ``@display name``, ``<@&id>`` ``@role``, ``<#id>``
  ``#channel-name``, a custom emoji ``<:name:id>`` / ``<a:name:id>`` ``:name:``. An id the
  tables do not name stays as typed (the raw form), so nothing is guessed.
- Every person a message mentions is kept in ``mention_ids`` with the name shown for them in
  ``mention_names`` ("" where the raw form stayed), so erasing that person can find the
  message and take the name back out (:func:`scrub_person`).
- People in ``hidden`` (opted out: they asked not to be remembered) are shown as
  ``@unknown-user``, which is what Discord's own client shows for a person it cannot resolve,
  and their id is not kept: a new line never names them.
- A logged text that shows ``@unknown-user`` is *sealed*: someone was taken out of it (erased,
  or opted out when it was written). The log keeps no trace of who, so a later version of that
  message (an edit, or Discord's copy compared by reconciliation) may name only the people its
  ``mention_ids`` still hold; anyone else it mentions stays ``@unknown-user``
  (:func:`names_for_version`). A bot's words can name a person in plain text, which no id
  marks; :func:`same_but_redacted` tells a copy that differs only where ``@unknown-user``
  stands from a real change (:func:`redact_names` is how such a name is taken out).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

# What an erased or opted-out person is called in other people's lines.
UNKNOWN_USER = "@unknown-user"
# A bigint column holds ids below 2^63; a longer "<@99999999999999999999>" is typed text,
# never a Discord id (snowflakes are 17-20 digits and stay below 2^63 until the year 2084).
MAX_ID = 2**63 - 1

_TOKEN = re.compile(
    r"<(?:@!?(?P<user>\d{1,20})|@&(?P<role>\d{1,20})|#(?P<channel>\d{1,20})"
    r"|a?:(?P<emoji>\w{1,32}):\d{1,20})>"
)
_RAW_USER = re.compile(r"<@!?(\d{1,20})>")
# What one "@unknown-user" can stand for in a copy of the message: a name as Discord shows it
# (display names, nicknames and usernames are at most 32 characters; with its "@", 33) or a
# raw mention (<@!id>: 23 at most). Never a line break: no name holds one.
_STOOD_FOR = r"[^\n]{1,33}"


@dataclass(frozen=True, slots=True)
class MentionNames:
    """What the ids in a text are called. ``hidden``: people never to be named (opted out)."""

    users: Mapping[int, str] = field(default_factory=dict)
    channels: Mapping[int, str] = field(default_factory=dict)
    roles: Mapping[int, str] = field(default_factory=dict)
    hidden: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class Wanted:
    """The ids a text mentions, to know what to look up (in order of appearance)."""

    users: tuple[int, ...] = ()
    channels: tuple[int, ...] = ()
    roles: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.users or self.channels or self.roles)


@dataclass(frozen=True, slots=True)
class Rendered:
    """A text with names for ids, and the people it mentions (ids and the names shown)."""

    text: str
    mention_ids: tuple[int, ...] = ()
    mention_names: tuple[str, ...] = ()


def _id(digits: str | None) -> int | None:
    if digits is None:
        return None
    value = int(digits)
    return value if value <= MAX_ID else None


def wanted(text: str) -> Wanted:
    """The user, channel and role ids ``text`` mentions (no emoji: their name is in the token)."""
    users: dict[int, None] = {}
    channels: dict[int, None] = {}
    roles: dict[int, None] = {}
    for match in _TOKEN.finditer(text):
        for kind, bucket in (("user", users), ("channel", channels), ("role", roles)):
            found = _id(match.group(kind))
            if found is not None:
                bucket[found] = None
    return Wanted(tuple(users), tuple(channels), tuple(roles))


def render_mentions(text: str, names: MentionNames) -> Rendered:
    """``text`` with names for the ids ``names`` knows, and the people it mentions."""
    mentioned: dict[int, str] = {}

    def replace(match: re.Match[str]) -> str:
        if match.group("emoji") is not None:
            return f":{match.group('emoji')}:"
        user = _id(match.group("user"))
        if user is not None:
            if user in names.hidden:
                return UNKNOWN_USER
            name = names.users.get(user)
            if name:
                mentioned[user] = name
                return f"@{name}"
            mentioned.setdefault(user, "")
            return match.group(0)
        channel = _id(match.group("channel"))
        if channel is not None and names.channels.get(channel):
            return f"#{names.channels[channel]}"
        role = _id(match.group("role"))
        if role is not None and names.roles.get(role):
            name = names.roles[role]
            return name if name.startswith("@") else f"@{name}"  # the default role is "@everyone"
        return match.group(0)

    rendered = _TOKEN.sub(replace, text) if "<" in text else text
    return Rendered(rendered, tuple(mentioned), tuple(mentioned.values()))


def with_raw_mentions(
    text: str, ids: Sequence[int], names: Sequence[str], extra: Iterable[tuple[int, str]] = ()
) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """``ids``/``names`` completed with ``extra`` people and with every raw ``<@id>`` left in
    ``text``, so an erasure finds each person the stored text mentions in any form."""
    kept: dict[int, str] = dict(zip(ids, names, strict=True))
    for person, name in extra:
        if person <= MAX_ID and person not in kept:
            kept[person] = name
    for match in _RAW_USER.finditer(text):
        raw = _id(match.group(1))
        if raw is not None:
            kept.setdefault(raw, "")
    return tuple(kept), tuple(kept.values())


def scrub_person(
    text: str, ids: Sequence[int], names: Sequence[str], person: int
) -> tuple[str, tuple[int, ...], tuple[str, ...]]:
    """Take ``person`` out of a message that mentions them: the name shown for them (and any
    raw ``<@person>``) becomes ``@unknown-user``, their id and name leave the lists."""
    theirs = {name for person_id, name in zip(ids, names, strict=True) if person_id == person and name}
    if theirs:
        # Every name the message shows, longest first: scrubbing "@Al" must leave "@Alice"
        # (another person it mentions) alone, yet "<@Al>x", shown as "@Alx", is Al's.
        shown = sorted({name for name in names if name}, key=len, reverse=True)
        any_name = re.compile("@(" + "|".join(re.escape(name) for name in shown) + ")")
        text = any_name.sub(lambda m: UNKNOWN_USER if m.group(1) in theirs else m.group(0), text)
    text = re.sub(rf"<@!?0*{person}>", UNKNOWN_USER, text)
    kept = [(i, n) for i, n in zip(ids, names, strict=True) if i != person]
    return text, tuple(i for i, _ in kept), tuple(n for _, n in kept)


def sealed(text: str | None) -> bool:
    """Whether a logged text shows someone as ``@unknown-user`` (see the module docstring)."""
    return text is not None and UNKNOWN_USER in text


def names_for_version(
    content: str, names: MentionNames, *, was_sealed: bool, kept_ids: Collection[int]
) -> MentionNames:
    """``names`` for rendering a new version of a logged message: when the logged text is
    sealed, every person ``content`` mentions who is not among ``kept_ids`` is hidden, since
    the log cannot tell them from the one it took out."""
    if not was_sealed:
        return names
    unknown = frozenset(wanted(content).users) - frozenset(kept_ids)
    return replace(names, hidden=names.hidden | unknown) if unknown else names


def same_but_redacted(logged: str, copy: str) -> bool:
    """Whether ``copy`` is ``logged`` with each ``@unknown-user`` standing for a name (at most
    33 characters, on one line): a copy that differs only where a person was taken out."""
    pieces = logged.split(UNKNOWN_USER)
    if len(pieces) == 1:
        return logged == copy
    pattern = _STOOD_FOR.join(re.escape(piece) for piece in pieces)
    return re.fullmatch(pattern, copy) is not None


def redact_names(text: str, names: Iterable[str]) -> str:
    """``text`` with each of ``names`` written as a whole word (an "@" before it included)
    shown as ``@unknown-user``: how a person leaves a bot's words, which name people in plain
    text. Four characters or more: any case ("Alice", "ALICE"); two or three: as written, so a
    person called "Al" or "may" does not take every "AL" or "May" with them; one: never (a
    letter is not a name to find). An ``@unknown-user`` already there is left whole."""
    wanted_names = {name.strip() for name in names if len(name.strip()) >= 2}
    if not wanted_names:
        return text
    ordered = sorted(wanted_names, key=len, reverse=True)  # "Alice Smith" before "Alice"
    long = [re.escape(name) for name in ordered if len(name) >= 4]
    short = [re.escape(name) for name in ordered if len(name) < 4]
    alternatives = [f"(?i:{'|'.join(long)})"] if long else []
    alternatives += short
    pattern = re.compile(rf"(?<!\w)@?(?:{'|'.join(alternatives)})(?!\w)")
    return UNKNOWN_USER.join(pattern.sub(UNKNOWN_USER, piece) for piece in text.split(UNKNOWN_USER))
