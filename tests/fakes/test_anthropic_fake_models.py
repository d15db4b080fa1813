"""The fake's Models API through the real anthropic SDK: retrieve by id or alias, 404 for an
unknown model, 401 for a bad key, newest-first pages, lifecycle filtering."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import pytest

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_models import CatalogueModel


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(api_keys={"good-key"}) as f:
        yield f


def sdk(fake: FakeAnthropic, key: str = "good-key") -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key=key, base_url=fake.base_url, max_retries=0)


async def test_retrieve_by_id_and_alias(fake: FakeAnthropic) -> None:
    client = sdk(fake)
    by_alias = await client.models.retrieve("claude-haiku-4-5")
    assert (by_alias.id, by_alias.type, by_alias.lifecycle) == (
        "claude-haiku-4-5-20251001",
        "model",
        "active",
    )
    assert (await client.models.retrieve("claude-sonnet-5-5")).display_name == "Claude Sonnet 5.5"
    await client.close()


async def test_unknown_model_is_404_and_bad_key_401(fake: FakeAnthropic) -> None:
    client = sdk(fake)
    with pytest.raises(anthropic.NotFoundError) as missing:
        await client.models.retrieve("claude-sonnet-9-9")
    assert missing.value.status_code == 404 and missing.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    with pytest.raises(anthropic.AuthenticationError):
        await sdk(fake, "bad-key").models.retrieve("claude-sonnet-5-5")
    with pytest.raises(anthropic.AuthenticationError):
        await sdk(fake, "bad-key").models.list()
    assert [entry.status for entry in fake.log] == [404, 401, 401]
    await client.close()


async def test_list_pages_newest_first_and_filters_by_lifecycle(fake: FakeAnthropic) -> None:
    fake.models.add(CatalogueModel("claude-old-1", "Old", "2024-01-01T00:00:00Z", lifecycle="retired"))
    client = sdk(fake)
    ids = [model.id async for model in client.models.list(limit=2)]  # the paginator follows after_id
    assert ids == ["claude-sonnet-5-5", "claude-haiku-5-5", "claude-sonnet-4-6", "claude-haiku-4-5-20251001",
                   "claude-sonnet-4-5-20250929"]  # fmt: skip
    first = await client.models.list(limit=2)
    assert first.has_more and len(first.data) == 2
    retired = await client.models.list(lifecycle=["retired"])
    assert [m.id for m in retired.data] == ["claude-old-1"]
    with pytest.raises(anthropic.BadRequestError):
        await client.models.list(limit=0)
    await client.close()


async def test_a_message_to_a_model_the_api_does_not_serve_is_404(fake: FakeAnthropic) -> None:
    client = sdk(fake)
    ask = [{"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.NotFoundError) as missing:
        await client.messages.create(model="claude-sonnet-9-9", max_tokens=10, messages=ask)  # type: ignore[arg-type]
    assert missing.value.body["error"] == {"type": "not_found_error", "message": "model: claude-sonnet-9-9"}  # type: ignore[index]
    with pytest.raises(anthropic.NotFoundError):
        await client.messages.count_tokens(model="claude-sonnet-9-9", messages=ask)  # type: ignore[arg-type]
    answered = await client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=ask)  # type: ignore[arg-type]
    assert answered.type == "message"  # an alias is served
    assert [entry.status for entry in fake.log] == [404, 404, 200]
    await client.close()
