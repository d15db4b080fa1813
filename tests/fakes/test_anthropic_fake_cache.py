"""The prompt-cache simulation, through the real SDK, one documented rule per test.

Sizes: 1 token per 4 UTF-8 bytes (``padded(n)`` is exactly n tokens); Sonnet 4.6 caches prefixes of
at least 1,024 tokens, Haiku 4.5 of at least 4,096 (memory/fakes/prompt_cache.py).
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic.types import Usage

from memory.fakes.prompt_cache import LOOKBACK_BLOCKS
from tests.fakes.anthropic_api import FakeAnthropic

SONNET = "claude-sonnet-4-6"


def padded(tokens: int, tag: str) -> str:
    """A text of exactly ``tokens`` tokens (4 bytes each) that differs per tag."""
    return (tag + ":").ljust(tokens * 4, ".")


def block(text: str, ttl: str | None = None) -> dict[str, Any]:
    marked: dict[str, Any] = {"type": "text", "text": text}
    if ttl:
        marked["cache_control"] = (
            {"type": "ephemeral"} if ttl == "default" else {"type": "ephemeral", "ttl": ttl}
        )
    return marked


def split(usage: Usage) -> tuple[int, int, int]:
    """(uncached input, cache write, cache read)."""
    return usage.input_tokens, usage.cache_creation_input_tokens or 0, usage.cache_read_input_tokens or 0


async def ask(client: anthropic.AsyncAnthropic, model: str = SONNET, **kwargs: Any) -> Usage:
    kwargs.setdefault("messages", [{"role": "user", "content": "q"}])  # 1 token
    message = await client.messages.create(model=model, max_tokens=20, **kwargs)
    return message.usage


async def test_repeat_of_the_same_prefix_reads_from_cache(client: anthropic.AsyncAnthropic) -> None:
    system = [block(padded(2000, "rules"), "default")]
    first = await ask(client, system=system, messages=[{"role": "user", "content": "question one"}])
    assert split(first) == (3, 2000, 0)
    assert first.cache_creation is not None and first.cache_creation.ephemeral_5m_input_tokens == 2000
    second = await ask(client, system=system, messages=[{"role": "user", "content": "question two!"}])
    assert split(second) == (4, 0, 2000)  # only the part after the mark is new


async def test_a_change_before_a_mark_misses_from_that_point(client: anthropic.AsyncAnthropic) -> None:
    def request(system_tag: str, document_tag: str) -> dict[str, Any]:
        content = [block(padded(600, document_tag), "5m"), block("q")]
        return {
            "system": [block(padded(1500, system_tag), "5m")],
            "messages": [{"role": "user", "content": content}],
        }

    assert split(await ask(client, **request("sys", "doc-v1"))) == (1, 2100, 0)
    # The document changed: the system mark before it still hits, the rest is written again.
    assert split(await ask(client, **request("sys", "doc-v2"))) == (1, 600, 1500)
    # The system changed: everything after the change misses, though the document is the same.
    assert split(await ask(client, **request("sys-v2", "doc-v2"))) == (1, 2100, 0)


async def test_tools_come_first_in_the_prefix(client: anthropic.AsyncAnthropic) -> None:
    def request(description: str) -> dict[str, Any]:
        tool = {"name": "lookup", "description": description, "input_schema": {"type": "object"}}
        return {"tools": [tool], "system": [block(padded(1500, "sys"), "5m")]}

    first = await ask(client, **request("Look things up."))
    written = first.cache_creation_input_tokens or 0
    assert first.input_tokens == 1 and written > 1500  # the tool is part of the cached prefix
    assert split(await ask(client, **request("Look things up."))) == (1, 0, written)
    changed_tool = await ask(client, **request("Look things up, quickly."))
    assert split(changed_tool) == (1, written + 2, 0)  # 9 more bytes of tool: 2 more tokens, all rewritten


async def test_a_mark_within_20_blocks_of_an_earlier_write_hits(client: anthropic.AsyncAnthropic) -> None:
    def blocks(count: int) -> dict[str, Any]:
        """A 1,100-token block, then 1-token blocks; the mark on the last one."""
        content = [block(padded(1100, "base"))] + [block(f"b{i:03d}") for i in range(1, count)]
        content[-1] = {**content[-1], "cache_control": {"type": "ephemeral"}}
        return {"messages": [{"role": "user", "content": content}]}

    assert split(await ask(client, **blocks(10))) == (0, 1109, 0)  # the entry ends at block 9
    assert split(await ask(client, **blocks(10 + 25))) == (0, 1134, 0)  # 25 blocks later: out of reach
    within = await ask(client, **blocks(10 + LOOKBACK_BLOCKS))  # mark at block 29, 20 after block 9
    assert split(within) == (0, 20, 1109)


async def test_an_entry_expires_after_its_lifetime_unless_read(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    system = [block(padded(1200, "rules"), "5m")]
    assert split(await ask(client, system=system)) == (1, 1200, 0)
    fake.advance(299)
    assert split(await ask(client, system=system)) == (1, 0, 1200)  # read: good for 5 more minutes
    fake.advance(299)  # 598 s after the write, but only 299 s after the read
    assert split(await ask(client, system=system)) == (1, 0, 1200)
    fake.advance(301)
    assert split(await ask(client, system=system)) == (1, 1200, 0)  # expired: written again


async def test_one_hour_entries_outlive_five_minute_ones(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    request: dict[str, Any] = {
        "system": [block(padded(1500, "rules"), "1h")],
        "messages": [{"role": "user", "content": [block(padded(600, "chat"), "5m"), block("q")]}],
    }
    first = await ask(client, **request)
    assert split(first) == (1, 2100, 0)
    assert first.cache_creation is not None
    assert (
        first.cache_creation.ephemeral_1h_input_tokens,
        first.cache_creation.ephemeral_5m_input_tokens,
    ) == (
        1500,
        600,
    )
    fake.advance(600)
    later = await ask(client, **request)
    assert split(later) == (1, 600, 1500)
    assert later.cache_creation is not None and later.cache_creation.ephemeral_5m_input_tokens == 600
    fake.advance(3601)
    assert split(await ask(client, **request)) == (1, 2100, 0)


async def test_a_fifth_mark_is_a_400(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    four = [block(padded(300, f"part{i}"), "5m") for i in range(4)]
    assert split(await ask(client, messages=[{"role": "user", "content": four}]))[1] == 1200
    five = [*four, block("extra", "5m")]
    with pytest.raises(anthropic.BadRequestError) as caught:
        await ask(client, messages=[{"role": "user", "content": five}])
    body: Any = caught.value.body
    assert body["error"]["message"] == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    assert fake.log[-1].status == 400


async def test_a_one_hour_mark_after_a_five_minute_mark_is_a_400(client: anthropic.AsyncAnthropic) -> None:
    content = [block(padded(600, "a"), "5m"), block(padded(600, "b"), "1h")]
    with pytest.raises(anthropic.BadRequestError, match="must not come after"):
        await ask(client, messages=[{"role": "user", "content": content}])


async def test_a_prompt_below_the_minimum_is_not_cached_and_not_an_error(
    client: anthropic.AsyncAnthropic,
) -> None:
    short = [block(padded(1023, "rules"), "5m")]
    assert split(await ask(client, system=short)) == (1024, 0, 0)
    assert split(await ask(client, system=short)) == (1024, 0, 0)  # nothing was stored
    exact = [block(padded(1024, "rules"), "5m")]
    assert split(await ask(client, system=exact)) == (1, 1024, 0)
    # The same 2,000 tokens are cacheable for Sonnet 4.6 (1,024) but not for Haiku 4.5 (4,096).
    mid = [block(padded(2000, "rules"), "5m")]
    assert split(await ask(client, model="claude-haiku-4-5", system=mid)) == (2001, 0, 0)
    assert split(await ask(client, model=SONNET, system=mid)) == (1, 2000, 0)


async def test_entries_are_per_model(client: anthropic.AsyncAnthropic) -> None:
    system = [block(padded(1500, "rules"), "5m")]
    assert split(await ask(client, model=SONNET, system=system)) == (1, 1500, 0)
    assert split(await ask(client, model="claude-sonnet-5-5", system=system)) == (1, 1500, 0)
    assert split(await ask(client, model=SONNET, system=system)) == (1, 0, 1500)


async def test_top_level_cache_control_marks_the_last_block(client: anthropic.AsyncAnthropic) -> None:
    messages: Any = [{"role": "user", "content": padded(1100, "history")}]
    first = await ask(client, messages=messages, cache_control={"type": "ephemeral"})
    assert split(first) == (0, 1100, 0)
    follow_up: Any = [*messages, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    assert split(await ask(client, messages=follow_up, cache_control={"type": "ephemeral"})) == (0, 2, 1100)


async def test_streamed_usage_reports_cache_reads(client: anthropic.AsyncAnthropic) -> None:
    system: Any = [block(padded(1500, "rules"), "5m")]
    await ask(client, system=system)
    kwargs: Any = {
        "model": SONNET,
        "max_tokens": 20,
        "system": system,
        "messages": [{"role": "user", "content": "q"}],
    }
    async with client.messages.stream(**kwargs) as stream:
        final = await stream.get_final_message()
    assert split(final.usage) == (1, 0, 1500)
