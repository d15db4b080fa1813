"""The usage ledger on the real database, usage read from SDK responses, and the reply client's
own SDK retries (429 then 200) against the local fake."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import anthropic
import pytest
from anthropic.types import Message
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.claude import ClaudeError, create_message, usage_from_response
from memory.compaction.summarizer import CallUsage
from memory.policy.ledger import cache_read_share, record_usage, usage_summary
from memory.pricing import PriceTable, Usage
from memory.storage.models import Chat, UsageEntry
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault

Sessions = async_sessionmaker[AsyncSession]
GUILD_A, GUILD_B = 111, 222


async def make_chat(session: AsyncSession, name: str, guild_id: int | None) -> int:
    chat = Chat(kind="text", name=name, guild_id=guild_id)
    session.add(chat)
    await session.flush()
    return chat.id


async def test_record_usage_writes_the_row_and_its_cost(sessions: Sessions) -> None:
    usage = Usage(
        input_tokens=1_000,
        output_tokens=500,
        cache_write_5m_tokens=2_000,
        cache_write_1h_tokens=4_000,
        cache_read_tokens=10_000,
    )
    async with sessions() as session:
        chat_id = await make_chat(session, "general", GUILD_A)
        cost = await record_usage(
            session,
            chat_id=chat_id,
            guild_id=GUILD_A,
            kind="reply",
            model="claude-sonnet-5-5",
            usage=usage,
            prices=PriceTable(),
        )
        await session.commit()
    # Sonnet 5.5, 2 / 10 / 2.50 / 4 / 0.10 per MTok:
    # 2,000 + 5,000 + 5,000 + 16,000 + 1,000 = 29,000 / 1e6 = $0.029
    assert cost == Decimal("0.029")
    async with sessions() as session:
        [row] = (await session.scalars(select(UsageEntry))).all()
    assert (row.chat_id, row.guild_id, row.kind) == (chat_id, GUILD_A, "reply")
    assert (row.model, row.input_tokens, row.output_tokens) == ("claude-sonnet-5-5", 1_000, 500)
    assert (row.cache_write_tokens, row.cache_write_1h_tokens) == (2_000, 4_000)
    assert row.cache_read_tokens == 10_000
    assert row.cost_usd == Decimal("0.029") and row.created_at is not None


async def test_cost_is_stored_to_the_column_precision(sessions: Sessions) -> None:
    async with sessions() as session:
        # One Haiku 5.5 5m cache write: 0.125 / 1e6 = 0.000000125 -> 0.00000013 (1e-8 column)
        tiny = await record_usage(
            session,
            chat_id=None,
            guild_id=None,
            kind="compact",
            model="claude-haiku-5-5",
            usage=Usage(cache_write_5m_tokens=1),
            prices=PriceTable(),
        )
        unknown = await record_usage(
            session,
            chat_id=None,
            guild_id=None,
            kind="compact",
            model="mystery-model",
            usage=Usage(input_tokens=10_000),
            prices=PriceTable(),
        )
        await session.commit()
        stored = sorted((await session.scalars(select(UsageEntry.cost_usd))).all())
    assert (tiny, unknown) == (Decimal("0.00000013"), Decimal(0))
    assert stored == [Decimal(0), Decimal("0.00000013")]


async def test_summary_by_kind_with_filters_and_the_cache_share(sessions: Sessions) -> None:
    prices = PriceTable()
    async with sessions() as session:
        chat_a = await make_chat(session, "a", GUILD_A)
        chat_b = await make_chat(session, "b", GUILD_B)
        reply = Usage(
            input_tokens=100,
            cache_write_5m_tokens=200,
            cache_write_1h_tokens=100,
            cache_read_tokens=600,
            output_tokens=50,
        )
        for _ in range(2):
            await record_usage(
                session,
                chat_id=chat_a,
                guild_id=GUILD_A,
                kind="reply",
                model="claude-sonnet-5-5",
                usage=reply,
                prices=prices,
            )
        await record_usage(
            session,
            chat_id=chat_a,
            guild_id=GUILD_A,
            kind="compact",
            model="claude-haiku-4-5",
            usage=Usage(input_tokens=4_000, output_tokens=100),
            prices=prices,
        )
        await record_usage(
            session,
            chat_id=chat_b,
            guild_id=GUILD_B,
            kind="reply",
            model="claude-sonnet-5-5",
            usage=Usage(input_tokens=1_000, output_tokens=10),
            prices=prices,
        )
        await session.commit()

        summary = await usage_summary(session, chat_id=chat_a)
        replies = summary.kind("reply")
        assert (replies.calls, replies.input_tokens, replies.output_tokens) == (2, 200, 100)
        assert (replies.cache_write_5m_tokens, replies.cache_write_1h_tokens) == (400, 200)
        assert (replies.cache_write_tokens, replies.cache_read_tokens) == (600, 1_200)
        # One reply: 100x2 + 200x2.50 + 100x4 + 600x0.10 + 50x10 = 200+500+400+60+500 = 1,660
        # -> $0.00166; two of them $0.00332.
        assert replies.cost_usd == Decimal("0.00332")
        # Haiku 4.5: 4,000x1 + 100x5 = 4,500 -> $0.0045
        assert summary.kind("compact").cost_usd == Decimal("0.0045")
        assert summary.total.calls == 3 and summary.total.cost_usd == Decimal("0.00782")
        # Reply prompt tokens: 200 input + 600 writes + 1,200 reads = 2,000; read share 0.6.
        # The compact row (4,000 uncached input) does not count.
        assert summary.cache_read_share == pytest.approx(0.6)
        assert await cache_read_share(session, guild_id=GUILD_A) == pytest.approx(0.6)
        # Whole ledger: reads 1,200 of 2,000 + 1,000 (chat b's uncached reply) = 0.4
        assert await cache_read_share(session) == pytest.approx(0.4)
        assert (await usage_summary(session, guild_id=GUILD_B)).kind("reply").calls == 1
        assert await cache_read_share(session, chat_id=-1) is None  # no rows

        # since: move the two replies of chat a a week back.
        week_ago = datetime.now(UTC) - timedelta(days=7)
        await session.execute(
            update(UsageEntry)
            .where(UsageEntry.chat_id == chat_a, UsageEntry.kind == "reply")
            .values(created_at=week_ago)
        )
        await session.commit()
        recent = await usage_summary(session, since=datetime.now(UTC) - timedelta(days=1))
        assert recent.kind("reply").calls == 1 and recent.kind("compact").calls == 1
        assert recent.cache_read_share == 0.0


def test_usage_from_response_with_and_without_the_ttl_split() -> None:
    base: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": "end_turn",
        "stop_sequence": None,
    }
    split = Message.model_validate(
        {
            **base,
            "usage": {
                "input_tokens": 10,
                "output_tokens": 20,
                "cache_creation_input_tokens": 300,
                "cache_read_input_tokens": 40,
                "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 200},
            },
        }
    )
    assert usage_from_response(split) == Usage(10, 20, 100, 200, 40)
    bare = Message.model_validate(
        {
            **base,
            "usage": {
                "input_tokens": 10,
                "output_tokens": 20,
                "cache_creation_input_tokens": 300,
            },
        }
    )
    assert usage_from_response(bare) == Usage(10, 20, 300, 0, 0)  # all as 5m: the default TTL


def test_usage_of_a_summarizer_call() -> None:
    call = CallUsage(
        model="m",
        input_tokens=1,
        output_tokens=2,
        cache_write_5m_tokens=3,
        cache_write_1h_tokens=4,
        cache_read_tokens=5,
        calls=2,
    )
    assert call.as_usage() == Usage(1, 2, 3, 4, 5)


async def test_reply_client_retries_a_429_itself_and_the_ledger_gets_the_answer(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, sessions: Sessions
) -> None:
    fake.faults.fail_next(1, Fault("rate_limit", retry_after=0.02))  # retry-after-ms: 20
    fake.script.push_text("Hi Pia, the train leaves at 9:15.", match="reply")
    message = await create_message(
        client,
        model="claude-sonnet-5-5",
        max_tokens=100,
        messages=[{"role": "user", "content": "when is the train?"}],
    )
    assert [entry.status for entry in fake.requests()] == [429, 200]
    assert fake.requests()[1].headers["x-stainless-retry-count"] == "1"
    usage = usage_from_response(message)
    assert usage.input_tokens == fake.requests()[1].usage["input_tokens"]  # type: ignore[index]
    async with sessions() as session:
        cost = await record_usage(
            session,
            chat_id=None,
            guild_id=GUILD_A,
            kind="reply",
            model=message.model,
            usage=usage,
            prices=PriceTable(),
        )
        await session.commit()
    # Sonnet 5.5: input x 2 + output x 10 per MTok.
    expected = Decimal(usage.input_tokens * 2 + usage.output_tokens * 10) / 1_000_000
    assert cost == expected > 0


async def test_reply_client_gives_up_after_its_retries(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.faults.fail_next(3, Fault("overloaded", retry_after=0.01))
    with pytest.raises(ClaudeError) as failure:
        await create_message(
            client, model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert failure.value.reason == "overloaded (529)"
    assert [entry.status for entry in fake.requests()] == [529, 529, 529]  # 1 + max_retries 2
