"""Which messages the bot answers: a mention of it (or of its role), a reply to it, its name as
a word (the gate then applies REPLY_TO_NAME), and every message of a DM when REPLY_IN_DMS is on."""

from __future__ import annotations

import re

import discord

from bot.gateway.chats import is_dm
from bot.settings import Settings

TRIGGER_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})


def mentions_name(text: str, name: str) -> bool:
    """``name`` as a whole word in ``text``, any case ("eva?" and "Eva's" yes, "Evan" no)."""
    if not name.strip():
        return False
    return re.search(rf"(?<!\w){re.escape(name.strip())}(?!\w)", text, re.IGNORECASE) is not None


def is_trigger(message: discord.Message, my_id: int, settings: Settings) -> bool:
    if message.author.id == my_id or message.type not in TRIGGER_TYPES:
        return False
    if message.author.bot and settings.ignore_bots:
        return False
    if is_dm(message.channel):
        return settings.reply_in_dms
    if any(user.id == my_id for user in message.mentions):
        return True
    if any(role.tags is not None and role.tags.bot_id == my_id for role in message.role_mentions):
        return True
    if replies_to(message, my_id):
        return True
    return mentions_name(message.content, settings.bot_name)  # the gate applies REPLY_TO_NAME


def replies_to(message: discord.Message, my_id: int) -> bool:
    ref = message.reference
    if ref is None:
        return False
    replied = ref.resolved if isinstance(ref.resolved, discord.Message) else ref.cached_message
    return replied is not None and replied.author.id == my_id
