"""The reply cog: when to answer, one turn per chat at a time, and sending the answer.

Triggers (docs/design.md section 9; bot/reply/triggers.py): a mention of the bot (or of its
managed role), a reply to one of its messages, its name as a whole word (REPLY_TO_NAME), any DM
(REPLY_IN_DMS); and in a server's join-in channels, a message to the room that a cheap check
says Eva can help with (bot/reply/join_in.py). Other bots are ignored (IGNORE_BOTS), and so is
the bot itself; @everyone is not a mention of the bot.

Each chat has one worker task at most: triggers queue up while a turn runs, and the next turn
answers all of them at once (they are all in its tail). Before a turn starts the worker waits
DEBOUNCE_SECONDS, so a burst of messages gets one answer. A trigger inside its author's
cooldown in that channel is held until the cooldown ends, then queued with whatever the same
person sent meanwhile (bot/reply/cooldown.py). Files of the triggers are read for the turn
(bot/reply/attachments.py), and with STREAM_REPLIES the answer grows on screen (bot/reply/live.py).
A reply reads only what its asker may read: someone denied the channel's history is answered
by a turn of their own without the memory (bot/reply/access.py). A DM with a person who
opted out of DM memory has no chat (none is made for them): they are answered by a turn without
the memory too, as a server answers them, and the reply is not logged either.
The cog never logs a message itself: ingest logs every message, the bot's own replies
included; a turn waits for ingest to flush its chat so the trigger is in the tail it reads.

Nothing here raises into discord.py: a failed model call becomes a short in-character note,
anything else a generic one, each logged once with ids and a reason (never message text).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import discord
import structlog
from discord.ext import commands, tasks

from bot.commands.forget_button import post_forget_confirmation
from bot.core.cache_policy import ALL_FIVE_MINUTES, CachePlan, TurnGaps
from bot.core.prompts import system_prompt
from bot.core.tools import TOOLS, TOOLS_WITHOUT_MEMORY, ToolContext, ToolResult, run_tool
from bot.core.turn import Trigger, TurnNote
from bot.core.turn_loop import TurnRequest, TurnResult, run_turn
from bot.gateway.chats import chat_for_channel, is_dm
from bot.gateway.running import ingest_of
from bot.reply.access import (
    WITHOUT_MEMORY_LINE,
    TurnGroup,
    plan_turns,
    reads_history,
    shown_trigger,
    turn_without_memory,
)
from bot.reply.attachments import FileLimits, file_blocks, read_files, turn_sources
from bot.reply.cooldown import CooldownGate
from bot.reply.gate import ReplyGate
from bot.reply.join_in import JoinIn
from bot.reply.keep_warm import TICK_SECONDS as KEEP_WARM_TICK_SECONDS
from bot.reply.keep_warm import KeepWarm
from bot.reply.limits import (
    CAP_NOTE,
    CLAUDE_DOWN_NOTE,
    EMPTY_REPLY_NOTE,
    SOMETHING_BROKE_NOTE,
    over_monthly_cap,
    record_turn_usage,
)
from bot.reply.live import LiveReply
from bot.reply.sending import defuse_mass_mentions, send_reply, typing_indicator
from bot.reply.triggers import is_trigger
from bot.services import Services, services_of

log = structlog.get_logger(__name__)

FLUSH_TIMEOUT = 10.0  # seconds to wait for ingest; past it the trigger goes inline in the note
NO_CHAT = 0  # the chat id of a turn in a DM that is not remembered (chat ids start at 1)
OPTED_OUT_DM_LINE = "-# I don't remember our DMs: you asked me not to. /remember-me turns it back on."


@dataclass(eq=False)
class ChatQueue:
    """Triggers of one channel waiting for the next turn, and the worker running turns."""

    triggers: list[discord.Message] = field(default_factory=list)
    worker: asyncio.Task[None] | None = None
    held: dict[int, list[discord.Message]] = field(default_factory=dict)  # author -> in cooldown
    timers: dict[int, asyncio.Task[None]] = field(default_factory=dict)  # author -> end of cooldown


class ReplyCog(commands.Cog):
    def __init__(self, bot: commands.Bot, services: Services) -> None:
        self.bot, self.services, self.settings = bot, services, services.settings
        self.system = system_prompt(self.settings)  # read once: byte-identical for every turn
        self.cooldown = CooldownGate(self.settings.user_cooldown_seconds)
        self.queues: dict[int, ChatQueue] = {}
        self.gate = ReplyGate(bot, services)  # per-server settings and spending
        self.join_in = JoinIn(bot, services, self.gate)  # answering unasked in join-in channels
        self.unprompted: set[int] = set()  # ids of queued messages nobody addressed to Eva
        # The streamed reply's edit interval runs on these (tests drive them by hand).
        self.live_clock: Callable[[], float] = time.monotonic
        self.live_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        # Each chat's recent turns choose its cache marks and keep-warm horizon (bot/core/cache_policy.py).
        self.turn_gaps = TurnGaps(most_warm_for=self.settings.keep_warm_hours * 3600)
        self.keep_warm = KeepWarm(services, self.gate, self.system)

    async def cog_load(self) -> None:
        if self.settings.keep_warm_hours > 0:
            self.keep_warm_loop.start()

    @tasks.loop(seconds=KEEP_WARM_TICK_SECONDS)
    async def keep_warm_loop(self) -> None:
        try:
            await self.keep_warm.tick()
        except Exception as exc:  # never seen (each ping handles its own); the loop must go on
            log.error("keep_warm.tick_failed", error=type(exc).__name__)

    async def cog_unload(self) -> None:
        self.keep_warm_loop.cancel()
        workers = [q.worker for q in self.queues.values() if q.worker is not None]
        workers += [timer for q in self.queues.values() for timer in q.timers.values()]
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)

    # --- triggers
    def is_trigger(self, message: discord.Message) -> bool:
        me = self.bot.user
        return me is not None and is_trigger(message, me.id, self.settings)

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if not self.is_trigger(message):
            if await self.join_in.consider(message):  # a join-in channel, asked of the room
                self.unprompted.add(message.id)
                self._enqueue(self.queues.setdefault(message.channel.id, ChatQueue()), [message])
            return
        queue = self.queues.setdefault(message.channel.id, ChatQueue())
        author_id = message.author.id
        if any(waiting.author.id == author_id for waiting in queue.triggers):
            queue.triggers.append(message)  # same person, turn not started: one answer for both
            return
        if author_id in queue.held:
            queue.held[author_id].append(message)  # answered with the held one, in one turn
            return
        wait = self.cooldown.wait(author_id, message.channel.id, self.services.clock.now())
        if wait > 0:
            log.info("reply.cooldown_wait", channel_id=message.channel.id, user_id=author_id)
            queue.held[author_id] = [message]
            queue.timers[author_id] = asyncio.create_task(
                self._release(queue, author_id, wait), name=f"cooldown-{message.channel.id}-{author_id}"
            )
            return
        if not await self._admit(message):
            return
        self._enqueue(queue, [message])

    def _enqueue(self, queue: ChatQueue, messages: list[discord.Message]) -> None:
        self.cooldown.start(messages[-1].author.id, messages[-1].channel.id, self.services.clock.now())
        queue.triggers.extend(messages)
        if queue.worker is None:
            channel_id = messages[-1].channel.id
            queue.worker = asyncio.create_task(self._drain(queue), name=f"reply-{channel_id}")

    async def _release(self, queue: ChatQueue, author_id: int, wait: float) -> None:
        """At the end of a cooldown: the held triggers, all of them, into the next turn."""
        try:
            await asyncio.sleep(wait)
        finally:
            queue.timers.pop(author_id, None)
        held = queue.held.pop(author_id, [])
        if held and await self._admit(held[-1]):
            self._enqueue(queue, held)

    async def _admit(self, message: discord.Message) -> bool:
        """The bill's limits; each refusal answers with one short note (or stays quiet)."""
        gate = await self.gate.check(message)
        if gate.note is not None:
            await self._send(message, gate.note)
        if not gate.admitted:
            return False
        guild_id = message.guild.id if message.guild else None
        try:
            capped = await over_monthly_cap(
                self.services.engine,
                cap=self.settings.guild_monthly_reply_cap,
                guild_id=guild_id,
                now=self.services.clock.now(),
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
        """The turns for these triggers (oldest first): one with the memory for the askers who
        may read this chat, one without it for each other asker (bot/reply/access.py)."""
        groups = plan_turns(batch, reads_history)
        apart = tuple(m for group in groups if not group.memory for m in group.messages)
        for group in groups:
            await self._answer(group, apart if group.memory else ())

    async def _answer(self, group: TurnGroup[discord.Message], apart: tuple[discord.Message, ...]) -> None:
        """One turn; the reply answers its last trigger. ``apart``: triggers of this chat that
        another turn answers without the memory."""
        trigger = group.messages[-1]
        guild_id = trigger.guild.id if trigger.guild else None
        ids = {"channel_id": trigger.channel.id, "message_id": trigger.id}
        result: TurnResult | None = None
        chat_id: int | None = None
        live = None
        if self.settings.stream_replies:
            live = LiveReply(
                trigger, defuse=defuse_mass_mentions, clock=self.live_clock, sleep=self.live_sleep
            )
        try:
            chat_id = await self._chat_id(trigger.channel, trigger.author)
            if chat_id is None and not is_dm(trigger.channel):
                return
            if chat_id is None:  # a DM with a person who opted out: no chat is kept, none made
                group = TurnGroup(group.messages, memory=False)
            async with typing_indicator(trigger.channel):
                result = await self._think(chat_id or NO_CHAT, guild_id, group, apart, live)
            if result.failure is not None:
                log.warning("reply.claude_failed", chat_id=chat_id, **ids, reason=result.failure)
                text = CLAUDE_DOWN_NOTE
            else:
                text = result.text or EMPTY_REPLY_NOTE
                if not group.memory:  # say why nothing earlier is remembered for them
                    text = f"{text}\n\n{WITHOUT_MEMORY_LINE if chat_id is not None else OPTED_OUT_DM_LINE}"
                log.info(
                    "reply.answered",
                    chat_id=chat_id,
                    **ids,
                    calls=result.calls,
                    tools=len(result.tool_calls),
                    step_limited=result.step_limited,
                    continued=result.continued,
                    cut=result.cut,
                    memory=group.memory,
                )
                self.services.metrics.replies.inc()
        except Exception as exc:
            # The traceback is rendered without the message (bot/log_tracebacks.py).
            log.error("reply.failed", chat_id=chat_id, **ids, error=type(exc).__name__, exc_info=exc)
            text = SOMETHING_BROKE_NOTE
        finally:
            if result is not None and result.usages:
                await self._record(chat_id, guild_id, result)
        if live is not None:
            await live.finish(text)
        else:
            await self._send(trigger, text)

    async def _chat_id(self, channel: Any, person: Any) -> int | None:
        chat_id = await chat_for_channel(self.bot, channel, person)  # person: who a DM is with
        if chat_id is None:  # paused: no new lines, but what it remembers still answers
            info = await self.services.engine.chat_by_discord_id(channel.id)
            chat_id = info.id if info is not None else None
        return chat_id

    async def _think(
        self,
        chat_id: int,
        guild_id: int | None,
        group: TurnGroup[discord.Message],
        apart: tuple[discord.Message, ...],
        live: LiveReply | None,
    ) -> TurnResult:
        batch, engine = list(group.messages), self.services.engine
        if group.memory:
            ingest = ingest_of(self.bot)
            if ingest is not None:
                await ingest.flush(chat_id, timeout=FLUSH_TIMEOUT)
            now = self.services.clock.now()
            triggers = tuple([await self._trigger(chat_id, message) for message in batch])
            elsewhere = [await self._trigger(chat_id, message) for message in apart]
            view = await engine.prompt_view(chat_id)
            apart_shown = tuple(t for t in elsewhere if t.index is not None)  # in the tail
            unprompted = all(message.id in self.unprompted for message in batch)
            self.unprompted.difference_update(message.id for message in batch)
            note = TurnNote(now, view.timezone, triggers, answered_apart=apart_shown, unprompted=unprompted)
            sources = await turn_sources(engine, chat_id, batch, guild_id)
            tools, plan = TOOLS, self.turn_gaps.plan(chat_id, now)
        else:  # nothing of the chat: not its row, its tail, its files, nor its indexes
            timezone, now = await self.gate.timezone_for(guild_id), self.services.clock.now()
            ingest = ingest_of(self.bot)
            view, note, sources = await turn_without_memory(ingest, chat_id, timezone, batch, now)
            tools, plan = TOOLS_WITHOUT_MEMORY, CachePlan(ALL_FIVE_MINUTES)
        limits = FileLimits(
            self.settings.image_max_bytes, self.settings.image_max_count, self.settings.text_file_max_bytes
        )
        files = file_blocks(await read_files(sources, limits))
        asker = batch[-1]

        async def ask_forget() -> None:
            await post_forget_confirmation(
                self.services, ingest_of(self.bot), asker.channel, guild_id=guild_id, asker_id=asker.author.id
            )

        context = ToolContext(
            engine=engine,
            chat_id=chat_id,
            asker_id=asker.author.id,
            asker_name=asker.author.display_name,
            result_bytes=self.settings.tool_result_bytes,
            ask_forget=ask_forget,
            reads_memory=group.memory,
        )

        async def tool(name: str, args: Any) -> ToolResult:
            return await run_tool(context, name, args)

        request = TurnRequest(
            model=await self.gate.model_for(guild_id),
            max_tokens=self.settings.reply_max_tokens,
            system=self.system,
            tools=tools,
            view=view,
            note=note,
            max_steps=self.settings.tool_steps,
            files=files,
            lifetimes=plan.lifetimes,
        )
        result = await run_turn(self.services.claude, request, tool, live)
        if group.memory and result.failure is None:
            self.keep_warm.turned(chat_id, guild_id, plan)
        return result

    async def _trigger(self, chat_id: int, message: discord.Message) -> Trigger:
        # Not logged (opted out, paused, or ingest late): its words are shown in this turn's note.
        index = await self.services.engine.index_of_snowflake(chat_id, message.id)
        return await shown_trigger(ingest_of(self.bot), message, index)

    async def _record(self, chat_id: int | None, guild_id: int | None, result: TurnResult) -> None:
        try:
            await record_turn_usage(
                self.services.engine,
                chat_id=chat_id,
                guild_id=guild_id,
                model=await self.gate.model_for(guild_id),
                usages=result.usages,
                prices=self.services.prices,
            )
        except Exception as exc:
            log.error("reply.ledger_failed", chat_id=chat_id, calls=result.calls, error=type(exc).__name__)

    # --- sending
    async def _send(self, trigger: discord.Message, text: str) -> None:
        await send_reply(trigger, text)


async def setup(bot: commands.Bot) -> None:
    await bot.add_cog(ReplyCog(bot, services_of(bot)))
