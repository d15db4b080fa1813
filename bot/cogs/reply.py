"""The reply cog: when to answer, one turn per chat at a time, and sending the answer.

Triggers (DESIGN.md section 9): a mention of the bot (or of its managed role), a reply to one
of its messages, its name as a whole word (REPLY_TO_NAME), any DM (REPLY_IN_DMS). Other bots
are ignored (IGNORE_BOTS), and so is the bot itself; @everyone is not a mention of the bot.

Each chat has one worker task at most: triggers queue up while a turn runs, and the next turn
answers all of them at once (they are all in its tail). Before a turn starts the worker waits
DEBOUNCE_SECONDS, so a burst of messages gets one answer. The cog never logs a message
itself: ingest logs every message, the bot's own replies included; a turn waits for ingest to
flush its chat so the trigger is in the tail it reads.

Nothing here raises into discord.py: a failed model call becomes a short in-character note,
anything else a generic one, each logged once with ids and a reason (never message text).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import discord
import structlog
from discord.ext import commands

from bot.chats import chat_for_channel, is_dm, services_of, visible
from bot.limits import (
    CAP_NOTE,
    CLAUDE_DOWN_NOTE,
    EMPTY_REPLY_NOTE,
    SOMETHING_BROKE_NOTE,
    Cooldown,
    Verdict,
    over_monthly_cap,
    record_turn_usage,
)
from bot.prompts import system_prompt
from bot.services import Services
from bot.splitting import split_message
from bot.tools import TOOLS, ToolContext, ToolResult, post_forget_confirmation, run_tool
from bot.turn import Trigger, TurnNote, TurnResult, run_turn

log = structlog.get_logger(__name__)

TRIGGER_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})
FLUSH_TIMEOUT = 10.0  # seconds to wait for ingest; past it the trigger goes inline in the note
# Users only, never @everyone or roles; the person answered is not pinged by the reply itself.
REPLY_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False)
_MASS_MENTION = re.compile(r"@(everyone|here)\b")


def mentions_name(text: str, name: str) -> bool:
    """``name`` as a whole word in ``text``, any case ("eva?" and "Eva's" yes, "Evan" no)."""
    if not name.strip():
        return False
    return re.search(rf"(?<!\w){re.escape(name.strip())}(?!\w)", text, re.IGNORECASE) is not None


def defuse_mass_mentions(text: str) -> str:
    """A zero-width space after the @: the text stays readable and can never ping, even if the
    allowed-mentions setting were lost somewhere."""
    return _MASS_MENTION.sub("@\u200b\\1", text)


@dataclass(eq=False)
class ChatQueue:
    """Triggers of one channel waiting for the next turn, and the worker running turns."""

    triggers: list[discord.Message] = field(default_factory=list)
    worker: asyncio.Task[None] | None = None


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


class ReplyCog(commands.Cog):
    def __init__(self, bot: commands.Bot, services: Services) -> None:
        self.bot, self.services, self.settings = bot, services, services.settings
        self.system = system_prompt(self.settings)  # read once: byte-identical for every turn
        self.cooldown = Cooldown(self.settings.user_cooldown_seconds)
        self.queues: dict[int, ChatQueue] = {}

    async def cog_unload(self) -> None:
        workers = [q.worker for q in self.queues.values() if q.worker is not None]
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)

    # --- triggers
    def is_trigger(self, message: discord.Message) -> bool:
        me = self.bot.user
        if me is None or message.author.id == me.id or message.type not in TRIGGER_TYPES:
            return False
        if message.author.bot and self.settings.ignore_bots:
            return False
        if is_dm(message.channel):
            return self.settings.reply_in_dms
        if any(user.id == me.id for user in message.mentions):
            return True
        if any(role.tags is not None and role.tags.bot_id == me.id for role in message.role_mentions):
            return True
        if self._replies_to_me(message, me.id):
            return True
        return self.settings.reply_to_name and mentions_name(message.content, self.settings.bot_name)

    @staticmethod
    def _replies_to_me(message: discord.Message, my_id: int) -> bool:
        ref = message.reference
        if ref is None:
            return False
        replied = ref.resolved if isinstance(ref.resolved, discord.Message) else ref.cached_message
        return replied is not None and replied.author.id == my_id

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if not self.is_trigger(message):
            return
        queue = self.queues.setdefault(message.channel.id, ChatQueue())
        if any(waiting.author.id == message.author.id for waiting in queue.triggers):
            queue.triggers.append(message)  # same person, turn not started: one answer for both
            return
        if not await self._admit(message):
            return
        queue.triggers.append(message)
        if queue.worker is None:
            queue.worker = asyncio.create_task(self._drain(queue), name=f"reply-{message.channel.id}")

    async def _admit(self, message: discord.Message) -> bool:
        """The bill's limits; each refusal answers with one short note (or stays quiet)."""
        verdict = self.cooldown.check(message.author.id, self.services.clock.now())
        if verdict is Verdict.NOTE:
            log.info("reply.cooldown", channel_id=message.channel.id, user_id=message.author.id)
            await self._send(message, self.cooldown.note())
        if verdict is not Verdict.ALLOW:
            return False
        guild_id = message.guild.id if message.guild else None
        try:
            capped = await over_monthly_cap(
                self.services.sessions,
                cap=self.settings.guild_monthly_reply_cap,
                guild_id=guild_id,
                now=self.services.clock.now(),
                timezone=self.settings.timezone,
            )
        except Exception as exc:  # the database is down: the turn will fail and say so
            log.warning("reply.cap_check_failed", guild_id=guild_id, error=type(exc).__name__)
            capped = False
        if capped:
            log.info("reply.monthly_cap", guild_id=guild_id, user_id=message.author.id)
            await self._send(message, CAP_NOTE)
            return False
        return True

    # --- turns
    async def _drain(self, queue: ChatQueue) -> None:
        try:
            while queue.triggers:
                if self.settings.debounce_seconds > 0:
                    await asyncio.sleep(self.settings.debounce_seconds)
                batch, queue.triggers = queue.triggers, []
                try:
                    await self.answer(batch)
                except Exception as exc:  # never seen; the next turn must still run
                    where = batch[-1].channel.id
                    log.error("reply.turn_crashed", channel_id=where, error=type(exc).__name__, exc_info=exc)
        finally:
            queue.worker = None

    async def answer(self, batch: list[discord.Message]) -> None:
        """One turn for these triggers (oldest first); the reply answers the last one."""
        trigger = batch[-1]
        guild_id = trigger.guild.id if trigger.guild else None
        ids = {"channel_id": trigger.channel.id, "message_id": trigger.id}
        result: TurnResult | None = None
        chat_id: int | None = None
        try:
            chat_id = await self._chat_id(trigger.channel)
            if chat_id is None:
                return
            async with typing_indicator(trigger.channel):
                result = await self._think(chat_id, guild_id, batch)
            if result.failure is not None:
                log.warning("reply.claude_failed", chat_id=chat_id, **ids, reason=result.failure)
                text = CLAUDE_DOWN_NOTE
            else:
                text = result.text or EMPTY_REPLY_NOTE
                log.info(
                    "reply.answered",
                    chat_id=chat_id,
                    **ids,
                    calls=result.calls,
                    tools=len(result.tool_calls),
                    step_limited=result.step_limited,
                )
        except Exception as exc:
            # The traceback is rendered without the message (bot/log_tracebacks.py).
            log.error("reply.failed", chat_id=chat_id, **ids, error=type(exc).__name__, exc_info=exc)
            text = SOMETHING_BROKE_NOTE
        finally:
            if result is not None and result.usages:
                await self._record(chat_id, guild_id, result)
        await self._send(trigger, text)

    async def _chat_id(self, channel: Any) -> int | None:
        chat_id = await chat_for_channel(self.bot, channel)
        if chat_id is None:  # paused: no new lines, but what it remembers still answers
            info = await self.services.engine.chat_by_discord_id(channel.id)
            chat_id = info.id if info is not None else None
        return chat_id

    async def _think(self, chat_id: int, guild_id: int | None, batch: list[discord.Message]) -> TurnResult:
        ingest = self.services.extras.get("ingest")
        if ingest is not None:
            await ingest.flush(chat_id, timeout=FLUSH_TIMEOUT)
        triggers = tuple([await self._trigger(chat_id, message) for message in batch])
        view = await self.services.engine.prompt_view(chat_id)
        note = TurnNote(self.services.clock.now(), view.timezone, triggers)
        asker = batch[-1]

        async def ask_forget() -> None:
            await post_forget_confirmation(
                self.services, asker.channel, guild_id=guild_id, asker_id=asker.author.id
            )

        context = ToolContext(
            engine=self.services.engine,
            chat_id=chat_id,
            asker_id=asker.author.id,
            asker_name=asker.author.display_name,
            result_bytes=self.settings.tool_result_bytes,
            ask_forget=ask_forget,
        )

        async def tool(name: str, args: Any) -> ToolResult:
            return await run_tool(context, name, args)

        return await run_turn(
            self.services.claude,
            model=self.settings.reply_model,
            max_tokens=self.settings.reply_max_tokens,
            system=self.system,
            tools=TOOLS,
            view=view,
            note=note,
            max_steps=self.settings.tool_steps,
            run_tool=tool,
        )

    async def _trigger(self, chat_id: int, message: discord.Message) -> Trigger:
        index = await self.services.engine.index_of_snowflake(chat_id, message.id)
        text = None
        if index is None:  # not logged (opted out, paused): shown in this turn's note only
            content, tags = visible(message)
            text = " ".join([content, *tags]).strip()
        return Trigger(message.author.display_name, message.author.id, index, text)

    async def _record(self, chat_id: int | None, guild_id: int | None, result: TurnResult) -> None:
        try:
            await record_turn_usage(
                self.services.sessions,
                chat_id=chat_id,
                guild_id=guild_id,
                model=self.settings.reply_model,
                usages=result.usages,
                prices=self.services.prices,
            )
        except Exception as exc:
            log.error("reply.ledger_failed", chat_id=chat_id, calls=result.calls, error=type(exc).__name__)

    # --- sending
    async def _send(self, trigger: discord.Message, text: str) -> None:
        """The reply in chunks of at most 2,000 characters, the first as a reply to the trigger."""
        reference = trigger.to_reference(fail_if_not_exists=False)
        for position, chunk in enumerate(split_message(defuse_mass_mentions(text))):
            try:
                if position == 0:
                    await trigger.channel.send(
                        chunk, reference=reference, mention_author=False, allowed_mentions=REPLY_MENTIONS
                    )
                else:
                    await trigger.channel.send(chunk, allowed_mentions=REPLY_MENTIONS)
            except discord.HTTPException as exc:
                log.warning(
                    "reply.send_failed",
                    channel_id=trigger.channel.id,
                    message_id=trigger.id,
                    status=exc.status,
                    code=exc.code,
                )
                return


async def setup(bot: commands.Bot) -> None:
    await bot.add_cog(ReplyCog(bot, services_of(bot)))
