"""What a DiscordChatExporter export says the ids in a message are called, for
memory/text/mentions.py: the people a message mentions, the roles the export knows, the exported
channel. Lenient (see dce-format's "version drift"): an entry without a usable id or name is
skipped, never a reason to refuse the import, since the message itself is still good.
"""

from __future__ import annotations

from typing import Any

from memory.discord_ids import parse_discord_id

Named = tuple[tuple[int, str], ...]  # (id, name) pairs, first wins


def id_and_name(ident: object, label: object) -> tuple[int, str] | None:
    """An (id, name) pair from an export's strings, or None when either is unusable (the id
    by the rule erasure accepts, memory/discord_ids.py: a name kept under an id no erasure can
    name would be a name nothing scrubs)."""
    number = parse_discord_id(ident) if isinstance(ident, str) else None
    if number is None or not isinstance(label, str) or not label:
        return None
    return number, label


def channel_names(document: dict[str, Any]) -> Named:
    """The exported channel, and for a thread its parent (DCE writes a thread's parent channel
    as its "category")."""
    channel = document.get("channel")
    if not isinstance(channel, dict):
        return ()
    keys = (("id", "name"), ("categoryId", "category"))
    pairs = (id_and_name(channel.get(ident), channel.get(label)) for ident, label in keys)
    return tuple(pair for pair in pairs if pair is not None)


def mentioned_people(message: dict[str, Any]) -> tuple[Named, list[dict[str, Any]]]:
    """The people a message mentions as (id, display name: ``nickname``, else ``name``), and
    their user objects (which carry their roles)."""
    users = message.get("mentions")
    users = [u for u in users if isinstance(u, dict)] if isinstance(users, list) else []
    found: dict[int, str] = {}
    for user in users:
        pair = id_and_name(user.get("id"), user.get("nickname") or user.get("name"))
        if pair is not None:
            found.setdefault(*pair)
    return tuple(found.items()), users


def role_names(users: list[Any]) -> Named:
    """Role names from the role lists DCE writes with each user (2.40.1+); best effort, since a
    mentioned role nobody in the message holds is not in the export."""
    found: dict[int, str] = {}
    for user in users:
        roles = user.get("roles") if isinstance(user, dict) else None
        for role in roles if isinstance(roles, list) else ():
            pair = id_and_name(role.get("id"), role.get("name")) if isinstance(role, dict) else None
            if pair is not None:
                found.setdefault(*pair)
    return tuple(found.items())
