"""The reconciliation plan and its pacing as pure functions, without a database or Discord
(bot/gateway/reconcile.py, memory/privacy/reconcile.py). Expected digests are computed here with hashlib
from the text written out by hand, not through the module under test."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import discord

from bot.gateway.reconcile import SeenMessage, absent_guilds, plan_page, window_start
from memory.privacy.reconcile import LoggedMessage, next_due
from memory.text.mentions import MentionNames


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def logged(snowflake: int, text: str, reply_to: int | None = None) -> LoggedMessage:
    return LoggedMessage(snowflake, md5(text), reply_to)


def test_a_message_missing_from_a_short_page_is_erased_wherever_it_is() -> None:
    log = [logged(11, "a"), logged(12, "b"), logged(13, "c"), logged(900, "late")]
    page = [SeenMessage(11, "a"), SeenMessage(13, "c")]
    plan = plan_page(log, page, after=10, full=False)
    # A short page is everything Discord has after 10: 12 and 900 are gone.
    assert plan.erase == [12, 900] and plan.edit == [] and plan.next_after is None


def test_a_full_page_covers_only_up_to_its_newest_message() -> None:
    log = [logged(11, "a"), logged(12, "b"), logged(14, "d"), logged(20, "beyond")]
    page = [SeenMessage(11, "a"), SeenMessage(13, "system message, not logged"), SeenMessage(14, "d")]
    plan = plan_page(log, page, after=10, full=True)
    assert plan.erase == [12]  # 20 is past the page: the next page decides
    assert plan.next_after == 14


def test_messages_at_or_before_the_start_are_not_judged() -> None:
    plan = plan_page([logged(5, "old"), logged(10, "edge")], [], after=10, full=False)
    assert plan.erase == [] and plan.edit == []


def test_an_edit_is_found_by_the_text_as_the_memory_sees_it() -> None:
    log = [
        logged(11, "same words [file: map.png] (reply to #3)", reply_to=3),
        logged(12, "before the edit"),
        logged(13, "a link [embed: Old Title]"),
    ]
    page = [
        SeenMessage(11, "same words", ("file:map.png",)),  # unchanged, with its reply mark
        SeenMessage(12, "after the edit"),
        SeenMessage(13, "a link", ("embed:New Title",)),  # an embed changed, no edit time needed
    ]
    plan = plan_page(log, page, after=10, full=False)
    assert [m.snowflake for m in plan.edit] == [12, 13]
    assert plan.edit[0].content == "after the edit" and plan.erase == []


def test_without_message_content_only_deletions_count() -> None:
    # No Message Content intent: Discord blanks the text, which is not an edit.
    log = [logged(11, "words"), logged(12, "gone")]
    plan = plan_page(log, [SeenMessage(11, "")], after=10, full=False, compare_text=False)
    assert plan.erase == [12] and plan.edit == []


def test_text_that_postgres_cannot_store_compares_as_stored() -> None:
    # The log keeps a NUL as U+FFFD: the same message on Discord is not an edit.
    plan = plan_page([logged(11, "a\ufffdb")], [SeenMessage(11, "a\x00b")], after=10, full=False)
    assert plan.edit == []


ALICE, BOB = 41, 42  # ids


def test_a_person_taken_out_of_a_message_is_not_read_as_an_edit() -> None:
    """Logged after alice's erasure: "hey @unknown-user bring the tent", bob still named.
    Discord's copy still says <@41>, and REST names bob by username where the live event gave
    his nickname: neither is an edit. A change of bob's words is one."""
    now_names = MentionNames(users={ALICE: "alice", BOB: "bob"})
    log = [
        LoggedMessage(
            11, md5("hey @unknown-user bring the tent, ask @Bobby"), None, (BOB,), ("Bobby",), sealed=True
        ),
        LoggedMessage(12, md5("@unknown-user can you bring the stove"), None, (), (), sealed=True),
        LoggedMessage(13, md5("ask @Bobby"), None, (BOB,), ("Bobby",)),
    ]
    page = [
        SeenMessage(11, f"hey <@{ALICE}> bring the tent, ask <@{BOB}>", names=now_names),
        SeenMessage(12, f"<@{ALICE}> can you bring the stove and the pegs", names=now_names),  # edited
        SeenMessage(13, f"ask <@{BOB}>", names=now_names),
    ]
    plan = plan_page(log, page, after=10, full=False)
    assert [m.snowflake for m in plan.edit] == [12] and plan.erase == []
    # An unsealed message mentioning someone it does not name: a mention was added by an edit.
    fresh = LoggedMessage(14, md5("see you"), None)
    assert plan_page([fresh], [SeenMessage(14, f"see you <@{ALICE}>", names=now_names)], 10, full=False).edit


def test_a_bot_message_with_a_name_taken_out_differs_only_there() -> None:
    """Eva wrote "Zephyrine is bringing the tent"; the erasure redacted the name in plain text,
    which no id marks. Discord's copy with the name is no edit; other words changed are one."""
    stored = "@unknown-user is bringing the tent (reply to #3)"
    logged_bot = LoggedMessage(11, md5(stored), 3, sealed=True, is_bot=True, text=stored)
    same = plan_page([logged_bot], [SeenMessage(11, "Zephyrine is bringing the tent")], 10, full=False)
    assert same.edit == []
    changed = plan_page([logged_bot], [SeenMessage(11, "Zephyrine is bringing the boat")], 10, full=False)
    assert [m.snowflake for m in changed.edit] == [11]
    # "@unknown-user" stands for a name, not for a sentence: a longer insertion is a change.
    longer = "Zephyrine, who told everyone about the flat on Birch Lane, is bringing the tent"
    assert plan_page([logged_bot], [SeenMessage(11, longer)], 10, full=False).edit


def test_only_guilds_missing_from_ready_are_absent() -> None:
    logged_guilds = {1, 2, 3}
    ready = [2, 3, 4]  # 3 unavailable (an outage) is still listed; 4 has no logged channel
    assert absent_guilds(logged_guilds, ready) == {1}


def test_the_walk_spreads_its_pages_over_the_period() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    period = timedelta(days=30)
    # 1,000,000 messages = 10,000 pages in 2,592,000 s: one every 259.2 s.
    assert next_due(now, now, period, 1_000_000, finished=False) == now + timedelta(seconds=259.2)
    assert next_due(now, now, period, 50, finished=False) == now + period  # one page
    started = now - timedelta(days=3)
    assert next_due(now, started, period, 50, finished=True) == started + period
    long_ago = now - timedelta(days=45)  # a walk that took longer than the period: start again
    assert next_due(now, long_ago, period, 50, finished=True) == now


def test_the_reconnect_window_starts_a_day_before_the_last_logged_message() -> None:
    last = datetime(2026, 11, 30, 18, 0, tzinfo=UTC)
    start = window_start(last, 86_400.0)
    assert start is not None
    assert discord.utils.snowflake_time(start) == datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
    assert window_start(None, 86_400.0) is None
