"""What ingest queues: one ordered queue of operations per channel (bot/ingest.py drains
them), and which failures are retried rather than skipped."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import discord
from discord import DiscordServerError

from bot.reconcile import Reconcile
from memory.errors import DatabaseUnavailable


def transient(exc: BaseException) -> bool:
    """A failure that goes away by itself: the database or Discord is down or restarting
    (connection refused, a connection dropped mid-statement, pool exhausted, 5xx)."""
    return isinstance(
        exc, DatabaseUnavailable | OSError | TimeoutError | aiohttp.ClientError | DiscordServerError
    )


@dataclass(slots=True)
class Append:
    message: discord.Message


@dataclass(slots=True)
class Edit:
    message_id: int
    content: str
    attachments: tuple[str, ...]
    message: discord.Message | None = None  # to show its mentions as names (bot/mentions.py)


@dataclass(slots=True)
class Erase:
    message_ids: frozenset[int]


@dataclass(slots=True)
class Backfill:
    chat_id: int | None = None  # None: resolve (and create) the chat from the channel
    after: int | None = None  # start here when the chat has nothing logged yet


Op = Append | Edit | Erase | Backfill | Reconcile


@dataclass(eq=False)
class ChannelQueue:
    channel_id: int
    guild_id: int | None
    parent_id: int | None
    channel: Any  # the latest Messageable seen for this channel (history, chat key)
    ops: deque[Op] = field(default_factory=deque)
    task: asyncio.Task[None] | None = None
    recovery_pending: bool = False  # a Backfill for dropped messages is queued
    last_accepted: int | None = None  # snowflake of the newest message queued
    singly: int = 0  # ops to write one at a time: their batch failed for a non-transient reason
    idle: asyncio.Event = field(default_factory=asyncio.Event)


def parent_id(channel: Any) -> int | None:
    return channel.parent_id if isinstance(channel, discord.Thread) else None
