"""The fence rules of bot/gateway/erasure_order.py, without Discord or a database: whose messages an
erasure refuses, which people a message may not name, how long a fence stays, and the
erasure's moment on Discord's clock."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bot.gateway.erasure_order import MARGIN_MS
from bot.gateway.fences import Fence, Fences, snowflake_after

SHIFT = 22  # a snowflake's milliseconds sit above its low 22 bits (Discord's documentation)
BOT, ALICE, BOB = 1, 2, 3
GUILD, OTHER_GUILD = 70, 80


def at(ms: int, sequence: int = 0) -> int:
    return (ms << SHIFT) | sequence


def message(snowflake: int, author: int, guild: int | None, recipient: int | None = None) -> Any:
    return SimpleNamespace(
        id=snowflake,
        author=SimpleNamespace(id=author),
        guild=SimpleNamespace(id=guild) if guild is not None else None,
        channel=SimpleNamespace(id=900, recipient=SimpleNamespace(id=recipient) if recipient else None),
    )


def test_a_running_erasure_refuses_all_of_theirs_in_its_scope_only() -> None:
    fences = Fences(lambda: at(1_000))
    fences.add(Fence(GUILD, ALICE))
    assert fences.refuses(message(at(5_000), ALICE, GUILD), BOT)  # even a newer one: it runs
    assert not fences.refuses(message(at(10), ALICE, OTHER_GUILD), BOT)
    assert not fences.refuses(message(at(10), ALICE, None), BOT)  # her DMs are another scope
    assert not fences.refuses(message(at(10), BOB, GUILD), BOT)
    assert fences.hidden(message(at(10), BOB, GUILD)) == {ALICE}  # bob's message may not name her


def test_a_committed_erasure_refuses_only_what_is_older_than_its_moment() -> None:
    fences = Fences(lambda: at(1_000))
    fence = fences.add(Fence(GUILD, ALICE))
    fences.refuses(message(at(400), ALICE, GUILD), BOT)  # held back while it ran
    assert fence.held_back == {900: at(400)}
    fences.close(fence, at(1_000))
    assert fences.refuses(message(at(999, 7), ALICE, GUILD), BOT)
    assert not fences.refuses(message(at(1_000), ALICE, GUILD), BOT)
    assert fences.hidden(message(at(999), BOB, GUILD)) == {ALICE}
    assert fences.hidden(message(at(1_001), BOB, GUILD)) == set()


def test_a_dm_erasure_refuses_both_sides_of_her_dm() -> None:
    fences = Fences(lambda: 0)
    fences.add(Fence(None, ALICE))
    assert fences.refuses(message(at(5), ALICE, None), BOT)
    assert fences.refuses(message(at(5), BOT, None, recipient=ALICE), BOT)  # the bot's reply to her
    assert not fences.refuses(message(at(5), BOT, None, recipient=BOB), BOT)
    assert not fences.refuses(message(at(5), ALICE, GUILD), BOT)


def test_a_fence_stays_fifteen_minutes_of_discord_time_after_its_moment() -> None:
    now = [at(0)]
    fences = Fences(lambda: now[0])
    fence = fences.add(Fence(GUILD, ALICE))
    fences.close(fence, at(60_000))
    now[0] = at(60_000 + 15 * 60_000 - 1)
    assert fences.refuses(message(at(59_999), ALICE, GUILD), BOT)
    now[0] = at(60_000 + 15 * 60_000)
    assert not fences.refuses(message(at(59_999), ALICE, GUILD), BOT)


def test_remember_me_lets_her_later_messages_in() -> None:
    fences = Fences(lambda: 0)
    fence = fences.add(Fence(GUILD, ALICE))
    fences.close(fence, at(2_000))
    fences.narrow(GUILD, ALICE, at(1_500))
    assert not fences.refuses(message(at(1_600), ALICE, GUILD), BOT)
    assert fences.refuses(message(at(1_400), ALICE, GUILD), BOT)


def test_the_moment_is_milliseconds_later_on_discords_clock() -> None:
    base = at(123_456, 99)
    assert snowflake_after(base, 0) == at(123_456)
    assert snowflake_after(base, 1.5) == at(124_956)
    assert snowflake_after(base, MARGIN_MS / 1000) == at(123_456 + MARGIN_MS)
