"""People cards (docs/design.md, people cards): what one chat's card call is, and its write.

When: the memory row says the cards are due (a quiet swap happened, or an erasure or edit
deleted lines they may have been built from), the row is whole (no repair pending) and the chat
is quiet (QUIET). A quiet swap changes the cached prefix anyway, and its cards follow in the
same pass, so the prompt's cached prefix moves no more often than it did without them. A forced
swap (TAIL_FORCE, while people talk) leaves the cards as they are until the next quiet swap:
built then, they would move the prefix a second time, after the quiet stretch that a 1-hour
cache mark outlives.

What: the PEOPLE_CARDS people who wrote most in the chat over the last PEOPLE_DAYS (never a
bot, never someone who opted out), each with the lines of the shown row that name them: memory
lines only, never raw messages. A line naming someone who opted out is left out of every input,
and a card that names them anyway is not kept: nobody who opted out is named in a card.

The write happens only while the row's version still holds (an erasure or edit moved it: the
cards may hold erased words, and are thrown away unseen; the erasure has marked them due).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.clock import Clock
from memory.compaction.card_prompts import lines_naming, names_any
from memory.compaction.summarizer import CallUsage, CardTask, CardWriter, SummarizerError
from memory.config import MemoryConfig
from memory.policy.ledger import record_usage
from memory.pricing import PriceTable
from memory.storage.models import Chat, MemoryRow
from memory.storage.people_cards import (
    Card,
    active_people,
    names_in_chat,
    opted_out_ids,
    replace_cards,
)
from memory.storage.tree_nodes import resolve
from memory.tree.node import nodes_of
from memory.tree.render import bare_text
from memory.tree.swap import is_quiet

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class CardPlan:
    version: int
    tasks: list[CardTask] = field(default_factory=list)
    forbidden: set[str] = field(default_factory=set)  # names of people who opted out


async def cards_ready(session: AsyncSession, config: MemoryConfig, chat_id: int, now: datetime) -> bool:
    """Whether the chat's cards are due and may be built now (whole row, quiet chat)."""
    row = (
        await session.execute(
            select(MemoryRow.cards_due, MemoryRow.needs_repair, Chat.last_message_at)
            .join(Chat, Chat.id == MemoryRow.chat_id)
            .where(MemoryRow.chat_id == chat_id)
        )
    ).one_or_none()
    if row is None or config.people_cards <= 0:
        return False
    due, repair, last_at = row
    return bool(due) and not repair and is_quiet(last_at, now, config)


async def plan_cards(session: AsyncSession, config: MemoryConfig, chat_id: int, now: datetime) -> CardPlan:
    """The card call for a chat whose cards are ready (:func:`cards_ready`)."""
    state = (await session.execute(select(MemoryRow).where(MemoryRow.chat_id == chat_id))).scalar_one()
    chat = (await session.execute(select(Chat).where(Chat.id == chat_id))).scalar_one()
    plan = CardPlan(version=state.version)
    opted = await opted_out_ids(session, chat.guild_id)
    since = now - timedelta(days=config.people_days)
    people = await active_people(session, chat_id, chat.next_index, since, config.people_cards, opted)
    if not people:
        return plan
    plan.forbidden = await names_in_chat(session, chat_id, opted)
    lines = [
        bare_text(record.text)
        for _, record in await resolve(session, chat_id, nodes_of(state.shown))
        if record is not None and record.text
    ]
    for person in people:
        theirs = lines_naming(lines, person.names, plan.forbidden)
        if theirs:
            plan.tasks.append(CardTask(person.person_id, person.name, theirs))
    return plan


def kept_cards(plan: CardPlan, cards: Sequence[str | None]) -> list[Card]:
    """The cards to store, in rank order: an empty answer is no card, and a card that names
    someone who opted out is dropped (their name may still stand in a line's words)."""
    return [
        Card(task.person_id, task.name, card)
        for task, card in zip(plan.tasks, cards, strict=True)
        if card and not names_any(card, plan.forbidden)
    ]


async def store_cards(
    session: AsyncSession, chat_id: int, plan: CardPlan, cards: list[Card], now: datetime
) -> bool:
    """Replace the chat's cards and clear their due flag, under the row's lock, if the row's
    version still holds; False (nothing written) when it moved."""
    state = (
        await session.execute(select(MemoryRow).where(MemoryRow.chat_id == chat_id).with_for_update())
    ).scalar_one_or_none()
    if state is None or state.version != plan.version:
        return False
    await replace_cards(session, chat_id, cards, now)
    state.cards_due = False
    return True


@dataclass(slots=True)
class CardRun:
    """What one look at a chat's cards did."""

    calls: int = 0
    cards: int = 0
    discarded: int = 0  # cards thrown away: the row moved while the call was out
    usage: CallUsage = field(default_factory=CallUsage)
    failure: SummarizerError | None = None


class CardBuilder:
    """Builds a chat's people cards with the compactor's model (under the compactor's chat
    lock); a failed call is tried again after RETRY, while the chat stays quiet."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        config: MemoryConfig,
        writer: CardWriter,
        clock: Clock,
        prices: PriceTable,
    ) -> None:
        self.sessions, self.cfg, self.writer, self.clock, self.prices = (
            sessions,
            config,
            writer,
            clock,
            prices,
        )
        self._retry_at: dict[int, datetime] = {}

    async def run(self, chat_id: int) -> CardRun:
        done = CardRun()
        now = self.clock.now()
        if self._retry_at.get(chat_id, now) > now:
            return done
        async with self.sessions() as session:
            if not await cards_ready(session, self.cfg, chat_id, now):
                return done
            plan = await plan_cards(session, self.cfg, chat_id, now)
        cards: list[str | None] = []
        if plan.tasks:
            try:
                batch = await self.writer.write_cards(plan.tasks)
            except SummarizerError as exc:
                self._retry_at[chat_id] = now + timedelta(seconds=self.cfg.retry_seconds)
                log.warning("compactor.cards_failed", chat_id=chat_id, reason=str(exc))
                done.failure = exc
                return done
            cards, done.usage, done.calls = batch.cards, batch.usage, 1
        self._retry_at.pop(chat_id, None)
        async with self.sessions() as session, session.begin():
            if done.calls:
                guild_id = await session.scalar(select(Chat.guild_id).where(Chat.id == chat_id))
                await record_usage(
                    session,
                    chat_id=chat_id,
                    guild_id=guild_id,
                    kind="cards",
                    model=done.usage.model or "unknown",
                    usage=done.usage.as_usage(),
                    prices=self.prices,
                )
            kept = kept_cards(plan, cards)
            if await store_cards(session, chat_id, plan, kept, self.clock.now()):
                done.cards = len(kept)
            else:
                done.discarded = len(plan.tasks)
        return done
