"""How a reply reaches the channel: in parts of at most 2,000 characters, each a reply to its
trigger, never pinging everyone, with the typing indicator shown while the turn thinks."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import discord
import structlog

from bot.reply.live import REPLY_MENTIONS
from bot.reply.splitting import split_message

log = structlog.get_logger("bot.reply.cog")

_MASS_MENTION = re.compile(r"@(everyone|here)\b")


def defuse_mass_mentions(text: str) -> str:
    """A zero-width space after the @: the text stays readable and can never ping, even if the
    allowed-mentions setting were lost somewhere."""
    return _MASS_MENTION.sub("@\u200b\\1", text)


@contextlib.asynccontextmanager
async def typing_indicator(channel: Any) -> AsyncIterator[None]:
    """``channel.typing()`` that never fails the turn (no permission, Discord hiccup)."""
    typing = channel.typing()
    try:
        await typing.__aenter__()
    except (discord.HTTPException, AttributeError):
        typing = None
    try:
        yield
    finally:
        if typing is not None:
            await typing.__aexit__(None, None, None)


async def send_reply(trigger: discord.Message, text: str) -> None:
    """The reply in chunks of at most 2,000 characters, each a reply to the trigger: the log
    then knows every part of the answer (an erasure of the trigger's author takes it whole)."""
    reference = trigger.to_reference(fail_if_not_exists=False)
    for chunk in split_message(defuse_mass_mentions(text)):
        try:
            await trigger.channel.send(
                chunk, reference=reference, mention_author=False, allowed_mentions=REPLY_MENTIONS
            )
        except discord.HTTPException as exc:
            log.warning(
                "reply.send_failed",
                channel_id=trigger.channel.id,
                message_id=trigger.id,
                status=exc.status,
                code=exc.code,
            )
            return
