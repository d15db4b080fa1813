"""A streamed reply on Discord (STREAM_REPLIES; docs/design.md, the reply turn).

The reply message is created once the model has written a whole sentence, then edited with
the growing text at most once every EDIT_SECONDS (1.5 s): Discord allows about 5 message edits
per 5 s in a channel, and the edits of one reply must leave room for other replies. Past 2,000
characters the text continues in further messages, cut as :func:`bot.reply.splitting.split_message`
cuts a finished reply, so the last render is exactly the non-streamed reply. While a tool runs
the message shows a short status line ("looking through the memory..."). Every send and edit
carries the same allowed mentions (users only), so an edit cannot ping a role or @everyone.

Nothing here raises into the turn: a refused send or edit is logged (ids and status only)
and the reply stops growing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import discord
import structlog

from bot.core.sentences import has_sentence
from bot.reply.splitting import split_message

log = structlog.get_logger(__name__)

EDIT_SECONDS = 1.5
TOOL_STATUS = {
    "recall": "looking through the memory…",
    "zoom": "reading older messages…",
    "forget_me": "getting the forget-me question ready…",
}
OTHER_TOOL_STATUS = "thinking it over…"

# Users only, never @everyone or roles; the person answered is not pinged by the reply itself.
REPLY_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False)


class LiveReply:
    """The Discord messages of one streamed reply; implements ``bot.core.turn_loop.TurnProgress``."""

    def __init__(
        self,
        trigger: discord.Message,
        *,
        defuse: Callable[[str], str],
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.trigger = trigger
        self.defuse = defuse
        self.clock = clock
        self.sleep = sleep
        self.messages: list[discord.Message] = []
        self.shown: list[str] = []  # the content of each message as last sent
        self.body = ""
        self.status: str | None = None
        self.last_render: float | None = None
        self.broken = False  # Discord refused a send or an edit: stop growing the reply

    async def text(self, so_far: str) -> None:
        self.body, self.status = so_far, None
        if not self.messages and not has_sentence(so_far):
            return
        await self._render_if_due()

    async def tool(self, name: str) -> None:
        self.status = TOOL_STATUS.get(name, OTHER_TOOL_STATUS)
        await self._render_if_due()

    async def finish(self, text: str) -> None:
        """The final text, after waiting out the edit interval if an edit is needed."""
        self.body, self.status = text, None
        if self.messages and self._chunks() != self.shown and self.last_render is not None:
            wait = EDIT_SECONDS - (self.clock() - self.last_render)
            if wait > 0:
                await self.sleep(wait)
        await self._render()

    def _content(self) -> str:
        body = self.body.strip()
        if self.status is None:
            return body
        status = f"-# {self.status}"  # Discord's small grey subtext line
        return f"{body}\n\n{status}" if body else status

    def _chunks(self) -> list[str]:
        return split_message(self.defuse(self._content()))

    async def _render_if_due(self) -> None:
        if self.last_render is not None and self.clock() - self.last_render < EDIT_SECONDS:
            return
        await self._render()

    async def _render(self) -> None:
        if self.broken:
            return
        chunks = self._chunks()
        if not chunks:
            return
        self.last_render = self.clock()
        try:
            for position, chunk in enumerate(chunks):
                if position < len(self.messages):
                    if self.shown[position] != chunk:
                        self.messages[position] = await self.messages[position].edit(
                            content=chunk, allowed_mentions=REPLY_MENTIONS
                        )
                        self.shown[position] = chunk
                    continue
                # Every part replies to the trigger, so the log knows each part of the answer
                # (an erasure of the trigger's author takes the whole answer: docs/security.md).
                sent = await self.trigger.channel.send(
                    chunk,
                    reference=self.trigger.to_reference(fail_if_not_exists=False),
                    mention_author=False,
                    allowed_mentions=REPLY_MENTIONS,
                )
                self.messages.append(sent)
                self.shown.append(chunk)
            for extra in self.messages[len(chunks) :]:  # a shorter final text (a failure note)
                await extra.delete()
            del self.messages[len(chunks) :], self.shown[len(chunks) :]
        except discord.HTTPException as exc:
            self.broken = True
            log.warning(
                "reply.send_failed",
                channel_id=self.trigger.channel.id,
                message_id=self.trigger.id,
                status=exc.status,
                code=exc.code,
            )
