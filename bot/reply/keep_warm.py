"""Keep-warm pings (bot/core/keep_warm.py says why): which chats are kept warm, and sending.

After a memory turn whose plan has a keep-warm horizon (bot/core/cache_policy.py), the chat is
held here with the turn's time and marks: no text, no prompt. Every TICK_SECONDS the due chats
are pinged: the prompt is built from the chat's memory as it is now, so an erasure, an edit or a
swap since the turn is what the ping sends. A ping is money nobody asked for, so it is only sent
while the server (for a DM, the DMs' share) and the host are under their budgets' warning level
(ReplyGate.may_spend_unasked); it is recorded in
the ledger as ``keep_warm`` (every budget counts it, no reply cap does). A failed ping is not
retried: the chat is let go, and its next turn writes the prompt as it would have anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from anthropic import AsyncAnthropic

from bot.core.cache_policy import CachePlan
from bot.core.keep_warm import next_ping, ping_request
from bot.core.tools import TOOLS
from bot.reply.gate import ReplyGate
from bot.services import Services
from memory.claude import ClaudeError, create_message, usage_from_response, without_retries

log = structlog.get_logger(__name__)

TICK_SECONDS = 60.0  # a ping is at most a minute late, well inside the 5 minutes PING_EVERY leaves


@dataclass(frozen=True, slots=True)
class WarmChat:
    """A chat being kept warm: its server (None for a DM), its last turn, its last request
    (turn or ping), and the turn's plan (the pings send its marks, for its horizon)."""

    guild_id: int | None
    turn_at: float
    sent_at: float
    plan: CachePlan


class KeepWarm:
    def __init__(self, services: Services, gate: ReplyGate, system: str) -> None:
        self.services, self.gate, self.system = services, gate, system
        self.chats: dict[int, WarmChat] = {}

    def turned(self, chat_id: int, guild_id: int | None, plan: CachePlan) -> None:
        """A memory turn of ``chat_id`` went out with ``plan``: keep it warm, or let it go."""
        if plan.kept_warm_for <= 0:
            self.chats.pop(chat_id, None)
            return
        now = self.services.clock.now().timestamp()
        self.chats[chat_id] = WarmChat(guild_id, now, now, plan)

    async def tick(self) -> int:
        """Ping every chat that is due; the number of pings sent."""
        now = self.services.clock.now().timestamp()
        sent = 0
        for chat_id, chat in list(self.chats.items()):
            at = next_ping(chat.turn_at, chat.sent_at, chat.plan.kept_warm_for)
            if at is None:
                del self.chats[chat_id]
            elif at <= now and self.chats.get(chat_id) is chat:
                sent += await self._ping(chat_id, chat, now)
        return sent

    async def _ping(self, chat_id: int, chat: WarmChat, now: float) -> int:
        ids = {"chat_id": chat_id, "guild_id": chat.guild_id}
        try:
            if not await self.gate.may_spend_unasked(chat.guild_id):
                log.info("keep_warm.stopped", **ids, reason="budget")
                return self._let_go(chat_id, chat)
            model = await self.gate.model_for(chat.guild_id)
            view = await self.services.engine.prompt_view(chat_id)
            if not view.row_lines and not view.tail_lines:  # wiped or erased meanwhile: nothing to keep
                return self._let_go(chat_id, chat)
            body = ping_request(
                model=model, system=self.system, tools=TOOLS, view=view, lifetimes=chat.plan.lifetimes
            )
            # No retries: a ping that fails is simply not sent again (the module docstring).
            client: AsyncAnthropic = without_retries(self.services.claude)
            usage = usage_from_response(await create_message(client, **body))
            await self.services.engine.record_usage(
                chat_id=chat_id, guild_id=chat.guild_id, kind="keep_warm", model=model,
                usages=[usage], prices=self.services.prices,
            )  # fmt: skip
        except ClaudeError as exc:
            log.warning("keep_warm.failed", **ids, reason=exc.reason)
            return self._let_go(chat_id, chat)
        except Exception as exc:  # a chat deleted meanwhile, the database down: let it go
            log.warning("keep_warm.failed", **ids, error=type(exc).__name__)
            return self._let_go(chat_id, chat)
        if self.chats.get(chat_id) is chat:  # a turn meanwhile holds the chat from its own time
            self.chats[chat_id] = WarmChat(chat.guild_id, chat.turn_at, now, chat.plan)
        log.info("keep_warm.pinged", **ids, read=usage.cache_read_tokens,
                 written=usage.cache_write_1h_tokens + usage.cache_write_5m_tokens)  # fmt: skip
        return 1

    def _let_go(self, chat_id: int, chat: WarmChat) -> int:
        """Stop keeping ``chat`` warm (not a newer turn's hold on the same chat); no ping sent."""
        if self.chats.get(chat_id) is chat:
            del self.chats[chat_id]
        return 0
