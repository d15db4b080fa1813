"""Reconciliation: what changed on Discord while the bot was not listening reaches the memory
(docs/design.md, reliability). Backfill only appends what is new; this compares what is
logged with what Discord shows now, so a message deleted there is erased here (the same
erasure as a live delete) and a message edited there is updated (the engine's edit path:
its lines are rebuilt).

- After a (re)connection that lost events (READY, a guild back from an outage), each chat
  is compared from RECONCILE_RECENT (24 h) before its newest logged message up to now:
  the bot was connected when it logged that message, so this covers the outage and at
  least the day before it. A RESUME replays every missed event, so it needs none.
- A background walk (bot/gateway/walk.py) goes through each chat's whole history, oldest
  first, one page of 100 messages at a time, spread evenly over RECONCILE_PERIOD (30 days): an
  old deletion is found in the end. Its cursor is stored, so a restart resumes the walk.
- Guilds the bot is no longer in (absent from READY) are forgotten like a live removal;
  guilds in READY but unavailable (a Discord outage) are kept.

Every page is one operation in the channel's ingest queue, so it is ordered with live
events: a live edit that arrives while a page is compared is applied after it.

Like is compared with like (:func:`as_logged`): Discord's copy is rendered with the log's own
names for the people the log names, and a person taken out of a sealed message (erased, or
opted out when it was written; memory/text/mentions.py) stays out, so a copy that differs only there
is not an edit. The edit itself is rendered by the memory under the row's lock (memory/privacy/erase.py),
by the same rules: a page that raced an erasure cannot bring the person back either.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import discord
import structlog

from bot.gateway.chats import is_dm, visible
from bot.gateway.ops import ChannelQueue, Reconcile
from bot.gateway.writer import LogWriter
from memory import RECONCILE_PAGE, LoggedMessage, storable, text_digest
from memory.text.mentions import MentionNames, names_for_version, render_mentions, same_but_redacted
from memory.text.records import message_text

log = structlog.get_logger(__name__)


# --- the plan (pure)


@dataclass(frozen=True, slots=True)
class SeenMessage:
    """A message as Discord shows it now: its visible text (raw ``<@id>`` mentions) and what
    its ids are called. The log stores mentions as names (memory/text/mentions.py), so the text is
    rendered the way the log would render it before comparing."""

    snowflake: int
    content: str
    attachments: tuple[str, ...] = ()
    names: MentionNames = field(default_factory=MentionNames)


def as_logged(logged: LoggedMessage, seen: SeenMessage) -> str:
    """Discord's copy rendered like with like: the people ``logged`` names under the names it
    shows for them, and a person taken out of a sealed message (erased, or opted out when it
    was written) as @unknown-user. Equal to the logged text unless its words changed."""
    kept = dict(zip(logged.mention_ids, logged.mention_names, strict=True))
    users = {person: name for person, name in seen.names.users.items() if person not in kept}
    users.update({person: name for person, name in kept.items() if name})  # "": the raw form stayed
    names = names_for_version(
        seen.content, replace(seen.names, users=users), was_sealed=logged.sealed, kept_ids=kept
    )
    content = render_mentions(seen.content, names).text
    return storable(message_text(content, seen.attachments, logged.reply_to))


@dataclass(slots=True)
class PagePlan:
    erase: list[int] = field(default_factory=list)  # snowflakes gone from Discord
    edit: list[SeenMessage] = field(default_factory=list)  # their text differs from the log
    next_after: int | None = None  # where the next page starts; None: nothing after this page


def plan_page(
    logged: Sequence[LoggedMessage],
    page: Sequence[SeenMessage],
    after: int,
    *,
    full: bool,
    compare_text: bool = True,
) -> PagePlan:
    """Compare one page of Discord history (the oldest messages after ``after``) with the log.

    A full page covers ``(after, newest on the page]``; a short one covers everything after
    ``after``, since Discord had nothing more. Within that span a logged message missing from
    the page was deleted; one whose text (as the memory sees it) differs was edited. Messages
    on the page that are not logged (system messages, opted-out people) are no concern here.
    ``compare_text`` False (no Message Content intent: Discord blanks the text) erases only.
    """
    on_discord = {m.snowflake: m for m in page}
    until = max(on_discord) if full and on_discord else None
    plan = PagePlan(next_after=until)
    for m in logged:
        if m.snowflake <= after or (until is not None and m.snowflake > until):
            continue
        now = on_discord.get(m.snowflake)
        if now is None:
            plan.erase.append(m.snowflake)
        elif compare_text:
            body = as_logged(m, now)
            if text_digest(body) == m.digest:
                continue
            if m.text is not None and same_but_redacted(m.text, body):
                continue  # a bot's words with a person's name taken out: nothing else changed
            plan.edit.append(now)
    return plan


def absent_guilds(logged: Iterable[int], ready: Iterable[int]) -> set[int]:
    """Guilds with logged channels that READY no longer lists: the bot was removed while away.
    READY lists every guild the bot is in, unavailable ones (an outage) included."""
    return set(logged) - set(ready)


def window_start(last_message_at: datetime | None, recent: float) -> int | None:
    """The snowflake after which a chat is compared on reconnect; None: nothing logged."""
    if last_message_at is None:
        return None
    return discord.utils.time_snowflake(last_message_at - timedelta(seconds=recent), high=False)


# --- one page, run inside the channel's ingest queue


def readable(channel: Any) -> bool:
    """Whether Discord would show us this channel's history. Without Read Message History it
    answers an empty list, not an error: taken at its word, every message would be erased."""
    if is_dm(channel):
        return True
    guild = getattr(channel, "guild", None)
    if guild is None or isinstance(channel, discord.PartialMessageable) or guild.me is None:
        return False
    permissions = channel.permissions_for(guild.me)
    return permissions.view_channel and permissions.read_message_history


async def _seen(writer: LogWriter, message: discord.Message) -> SeenMessage:
    """Discord's message with names for its ids: raw ``<@id>`` compared with a logged ``@name``
    would look like an edit on every pass, and the edit would store the raw form."""
    content, tags = visible(message)
    names = await writer.mentions.lookup(message, content, await writer.hidden_people(message))
    return SeenMessage(message.id, content, tags, names)


async def run_page(writer: LogWriter, q: ChannelQueue, op: Reconcile) -> Reconcile | None:
    """Compare one page and apply the plan; returns the next page of a reconnect window."""
    engine, services = writer.engine, writer.services
    if not readable(q.channel):
        log.info("reconcile.skipped", channel_id=q.channel_id, chat_id=op.chat_id, reason="no history access")
        return None
    try:
        history = q.channel.history(limit=RECONCILE_PAGE, after=discord.Object(op.after), oldest_first=True)
        page = [await _seen(writer, m) async for m in history]
    except (discord.NotFound, discord.Forbidden) as exc:
        # A deleted channel is forgotten by the backfill queued before this; no access: skip.
        log.info("reconcile.skipped", channel_id=q.channel_id, chat_id=op.chat_id, reason=type(exc).__name__)
        return None
    full = len(page) == RECONCILE_PAGE
    until = max(m.snowflake for m in page) if full else None
    logged = await engine.logged_after(op.chat_id, op.after, until)
    plan = plan_page(logged, page, op.after, full=full, compare_text=writer.bot.intents.message_content)
    if plan.erase:
        report = await engine.erase_messages(op.chat_id, plan.erase)
        log.info("reconcile.erased", chat_id=op.chat_id, messages=report.messages, lines=report.nodes)
    for seen in plan.edit:
        await engine.edit(op.chat_id, seen.snowflake, seen.content, seen.attachments, seen.names)
    if plan.edit:
        log.info("reconcile.edited", chat_id=op.chat_id, messages=len(plan.edit))
    now = services.clock.now()
    if op.walk:
        period = timedelta(seconds=writer.settings.reconcile_period)
        await engine.walk_page_done(op.chat_id, plan.next_after, now, period)
        return None  # the walk's next page waits for its turn (bot/gateway/walk.py, Reconciler.step)
    if plan.next_after is not None:
        return Reconcile(op.chat_id, plan.next_after)
    await engine.recent_done(op.chat_id, now)
    log.info("reconcile.window_done", chat_id=op.chat_id)
    return None
