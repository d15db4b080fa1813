"""The people cards' call through the real SDK against the local Anthropic fake (its request
validation on): one request for all of a chat's cards, accepted as the real API accepts it,
answered one card per person within CARD_BYTES; a failure is one SummarizerError."""

from __future__ import annotations

import anthropic
import pytest

from memory.compaction.anthropic_summarizer import AnthropicSummarizer, card_request
from memory.compaction.card_prompts import CARD_BYTES, card_system
from memory.compaction.summarizer import CardTask, SummarizerError
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault

MODEL = "claude-haiku-4-5"
TASKS = [
    CardTask(1, "Pia", ("Pia: training for the Oslo marathon in May", "Tom said Pia moves to Bergen " * 20)),
    CardTask(2, "Tom", ("Tom: fixes bikes on Saturdays",)),
]


async def test_one_request_writes_every_card_within_the_limit(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    batch = await AnthropicSummarizer(client, model=MODEL).write_cards(TASKS)
    (entry,) = fake.requests()
    assert entry.kind == "cards" and entry.status == 200 and entry.body == card_request(MODEL, TASKS)
    assert entry.body["system"] == [{"type": "text", "text": card_system()}]
    pia, tom = batch.cards
    assert pia is not None and pia.startswith("Pia: training") and len(pia.encode()) <= CARD_BYTES
    assert tom == "Tom: fixes bikes on Saturdays"
    assert batch.usage.calls == 1 and batch.usage.input_tokens > 0 and batch.usage.output_tokens > 0


async def test_the_fake_refuses_a_cards_request_the_real_api_would(fake: FakeAnthropic) -> None:
    raw = anthropic.AsyncAnthropic(api_key="test", base_url=fake.base_url, max_retries=0)
    body = card_request(MODEL, TASKS)
    with pytest.raises(anthropic.BadRequestError):
        await raw.messages.create(**{**body, "max_tokens": 0})
    with pytest.raises(anthropic.BadRequestError):
        await raw.messages.create(**{**body, "messages": [{"role": "assistant", "content": "x"}]})
    await raw.close()


async def test_a_failed_call_is_one_summarizer_error(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.faults.fail_next(1, Fault("overloaded"), match="cards")
    with pytest.raises(SummarizerError) as failed:
        await AnthropicSummarizer(client, model=MODEL).write_cards(TASKS)
    assert failed.value.rate_limited
    assert len(fake.requests()) == 1  # no SDK retry: the compactor retries after RETRY
