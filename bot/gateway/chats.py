"""Discord objects in the memory's terms: a channel, thread or DM is one memory ("chat",
docs/design.md section 3) and a message is one log entry (section 4).

Every cog maps a channel to its chat through :func:`chat_for_channel`, so a channel can never
read or write another channel's memory.
"""

from __future__ import annotations

from typing import Any

import discord

from bot.services import services_of
from bot.shards import holds_dms
from memory import ChatInfo, ChatKey, MemoryEngine, NewMessage, Rendered

# Guild channels whose messages are a conversation. Voice and stage channels have a text chat
# of their own; forum and media posts are threads.
GUILD_TEXT_TYPES = (discord.TextChannel, discord.VoiceChannel, discord.StageChannel)

# What people post; system messages (joins, pins, boosts, thread starters) are not logged.
LOGGED_TYPES = frozenset(
    {
        discord.MessageType.default,
        discord.MessageType.reply,
        discord.MessageType.chat_input_command,
        discord.MessageType.context_menu_command,
    }
)


def chat_key(channel: Any, person: Any = None) -> ChatKey | None:
    """Where a channel's memory lives, or None for channels that are not a conversation
    (categories, forums themselves, group DMs). ``person``: who a DM is with, when discord.py
    does not know (a DM channel built from a message event has no recipients)."""
    if isinstance(channel, discord.Thread):
        return ChatKey(
            kind="thread",
            name=channel.name,
            discord_id=channel.id,
            guild_id=channel.guild.id,
            parent_id=channel.parent_id,
        )
    if isinstance(channel, GUILD_TEXT_TYPES):
        return ChatKey(kind="text", name=channel.name, discord_id=channel.id, guild_id=channel.guild.id)
    if isinstance(channel, discord.DMChannel):
        recipient = channel.recipient or person
        who = recipient.name if recipient is not None else str(channel.id)
        recipient_id = recipient.id if recipient is not None else None
        return ChatKey(kind="dm", name=f"dm-{who}", discord_id=channel.id, recipient_id=recipient_id)
    return None


def is_dm(channel: Any) -> bool:
    return isinstance(channel, discord.DMChannel) or (
        isinstance(channel, discord.PartialMessageable) and channel.type == discord.ChannelType.private
    )


async def chat_for_channel(bot: discord.Client, channel: Any, person: Any = None) -> int | None:
    """The chat id of a channel, thread or DM (created on first sight), or None when the
    channel is not remembered: paused, a DM while REPLY_IN_DMS is off or with a person who
    opted out, or not a conversation. ``person``: the author of a DM message (not the bot)."""
    services = services_of(bot)
    if is_dm(channel) and not services.settings.reply_in_dms:
        return None
    engine = services.engine
    info = await engine.chat_by_discord_id(channel.id)
    key = chat_key(channel, person)
    if info is not None:
        if info.paused:
            return None
        await keep_current(engine, info, key)
        return info.id
    if key is None and isinstance(channel, discord.PartialMessageable):
        # Not in discord.py's cache (a thread we were just added to, say): ask Discord what it is.
        try:
            key = chat_key(await bot.fetch_channel(channel.id))
        except discord.HTTPException:
            return None
    if key is None or key.discord_id is None:
        return None
    # A DM chat is created only once we know who it is with, and never for a person who opted
    # out of DM memory: not even a row with their name. (Unknown: the bot's own echo in a DM
    # channel discord.py has not cached; the person's next message creates it.)
    if key.kind == "dm" and (key.recipient_id is None or key.recipient_id in await engine.opted_out(None)):
        return None
    return await engine.ensure_chat(key)


async def keep_current(engine: MemoryEngine, info: ChatInfo, key: ChatKey | None) -> None:
    """A known chat under its channel's name now (keep `eva stats` readable), and a DM's person
    once known."""
    if key is None:
        return
    renamed = info.name != key.name[:200] and key.name != f"dm-{key.discord_id}"
    learned = key.recipient_id is not None and info.recipient_id is None
    if renamed or learned:
        await engine.ensure_chat(key)


def channel_for_chat(bot: discord.Client, info: ChatInfo) -> Any:
    """Something to read a logged chat's history from, or None to skip it for now: a guild
    that is not available yet (its on_guild_available backfills it), or an archived thread
    (not in the cache; an archived thread takes no new messages)."""
    if info.discord_id is None:
        return None
    channel = bot.get_channel(info.discord_id)
    if channel is not None:
        return channel
    if info.kind == "dm":
        # DMs arrive on shard 0: the process that holds it reads their history, no other.
        if not holds_dms(bot):
            return None
        return bot.get_partial_messageable(info.discord_id, type=discord.ChannelType.private)
    guild = bot.get_guild(info.guild_id) if info.guild_id is not None else None
    if info.kind == "thread" or guild is None or guild.unavailable:
        return None
    # Not in an available guild's cache: deleted while we were away (history answers 404 and
    # the memory goes) or hidden from us (403, skipped).
    return bot.get_partial_messageable(info.discord_id, guild_id=guild.id, type=discord.ChannelType.text)


# --- a Discord message, as the memory sees it (docs/design.md section 4)


def attachment_tags(source: discord.Message | discord.MessageSnapshot) -> tuple[str, ...]:
    tags = [f"file:{a.filename}" for a in source.attachments]
    tags += [f"sticker:{s.name}" for s in source.stickers]
    tags += [f"embed:{e.title}" for e in source.embeds if e.title]
    return tuple(tags)


def visible(message: discord.Message) -> tuple[str, tuple[str, ...]]:
    """Content and tags as shown in the channel; a forward shows the forwarded message."""
    if not message.content and message.message_snapshots:
        snapshot = message.message_snapshots[0]
        return snapshot.content, attachment_tags(message) + attachment_tags(snapshot)
    return message.content, attachment_tags(message)


def replied_snowflake(message: discord.Message) -> int | None:
    """The message this one replies to, when it is in the same channel (not a forward)."""
    ref = message.reference
    if ref is None or ref.message_id is None or ref.type != discord.MessageReferenceType.default:
        return None
    if ref.channel_id != message.channel.id:
        return None
    return ref.message_id


def log_entry(message: discord.Message, rendered: Rendered) -> tuple[NewMessage, int | None]:
    """The one log entry of a message and the snowflake it replies to (its index is found under
    the chat's lock when it is appended); ``rendered``: its visible text with mentions as names
    (bot/gateway/mentions.py)."""
    entry = NewMessage(
        author_name=message.author.display_name,  # nick, else global name, else username
        created_at=message.created_at,
        content=rendered.text,
        author_id=message.author.id,
        snowflake=message.id,
        is_bot=message.author.bot,
        attachments=visible(message)[1],
        edited_at=message.edited_at,
        mention_ids=rendered.mention_ids,
        mention_names=rendered.mention_names,
    )
    return entry, replied_snowflake(message)
