"""The fake answers the join-in check (bot/core/join_in.py) as the real API would: the request
passes the API's validation, the answer is one short word, a test can choose it, and a request
the real API refuses is refused here too."""

from __future__ import annotations

import anthropic
import pytest

from bot.core.join_in import check_request, says_yes
from memory.claude import message_text
from tests.fakes.anthropic_api import FakeAnthropic

MODEL = "claude-haiku-5-5"
LINES = ["#0 2026-01-01 10:00 ann: hi all", "#1 2026-01-01 10:01 bob: anyone know when the padel is?"]


async def test_the_check_is_answered_by_the_judge_unless_a_test_scripts_it(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    asked = await client.messages.create(**check_request(MODEL, "Eva", LINES))
    assert says_yes(message_text(asked)) and asked.stop_reason == "end_turn"
    assert asked.usage.input_tokens > 50 and asked.usage.output_tokens >= 1
    told = await client.messages.create(**check_request(MODEL, "Eva", [*LINES, "#2 ann: it's at 7"]))
    assert message_text(told) == "no"
    fake.script.push_text("no", match="join_in")
    assert message_text(await client.messages.create(**check_request(MODEL, "Eva", LINES))) == "no"
    assert [entry.kind for entry in fake.requests()] == ["join_in"] * 3


async def test_a_check_the_real_api_would_refuse_is_refused(client: anthropic.AsyncAnthropic) -> None:
    bad = check_request(MODEL, "Eva", LINES)
    with pytest.raises(anthropic.BadRequestError):
        await client.messages.create(**{**bad, "max_tokens": 0})
    with pytest.raises(anthropic.BadRequestError):
        await client.messages.create(
            **{**bad, "messages": [{"role": "assistant", "content": "yes"}, *bad["messages"]]}
        )
