"""The per-server rules as pure functions, without a database or Discord."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from memory.policy.guild_policy import (
    Asker,
    BudgetLevel,
    Defaults,
    GuildChoices,
    Refusal,
    budget_level,
    dm_budget,
    effective,
    may_talk,
    month_key,
    month_start,
    refusal,
    valid_timezone,
)

DEFAULTS = Defaults(
    reply_to_name=True,
    model="claude-sonnet-5-5",
    allowed_models=("claude-sonnet-5-5", "claude-haiku-4-5"),
    timezone="UTC",
    monthly_budget_usd=Decimal("10"),
)
ALICE, BOB, CAROL = 1, 2, 3
MODS, MUTED = 100, 200
GENERAL, RANDOM, THREAD_OF_GENERAL = 10, 11, 12


def asker(author: int = ALICE, roles: tuple[int, ...] = (), channel: int = GENERAL, **kw: object) -> Asker:
    return Asker(author_id=author, role_ids=frozenset(roles), channel_id=channel, **kw)  # type: ignore[arg-type]


def test_unset_choices_follow_the_defaults_and_set_ones_win() -> None:
    plain = effective(GuildChoices(), DEFAULTS)
    assert (plain.reply_mode, plain.reply_to_name, plain.model, plain.timezone) == (
        "everywhere", True, "claude-sonnet-5-5", "UTC",
    )  # fmt: skip
    assert plain.monthly_budget_usd == Decimal("10") and plain.overridden == frozenset()
    chosen = effective(
        GuildChoices(reply_to_name=False, model="claude-haiku-4-5", timezone="Asia/Tokyo",
                     monthly_budget_usd=Decimal("0")),
        DEFAULTS,
    )  # fmt: skip
    assert not chosen.reply_to_name and chosen.model == "claude-haiku-4-5" and chosen.timezone == "Asia/Tokyo"
    assert chosen.monthly_budget_usd is None  # 0 chosen here = no budget, whatever the default
    assert chosen.overridden == {"reply_to_name", "model", "timezone", "monthly_budget_usd"}


def test_a_model_the_host_took_off_the_list_falls_back_to_the_default() -> None:
    assert effective(GuildChoices(model="claude-opus-4-1"), DEFAULTS).model == "claude-sonnet-5-5"


def test_llmcord_access_rules_block_wins_and_allow_lists_admit_only_those() -> None:
    open_policy = effective(GuildChoices(), DEFAULTS)
    assert may_talk(open_policy, ALICE, [])
    blocked = effective(
        GuildChoices(block_roles=frozenset({MUTED}), block_members=frozenset({BOB})), DEFAULTS
    )
    assert not may_talk(blocked, ALICE, [MUTED]) and not may_talk(blocked, BOB, [])
    assert may_talk(blocked, CAROL, [MODS])
    allowed = effective(
        GuildChoices(
            allow_roles=frozenset({MODS}), allow_members=frozenset({CAROL}), block_roles=frozenset({MUTED})
        ),
        DEFAULTS,
    )
    assert may_talk(allowed, ALICE, [MODS]) and may_talk(allowed, CAROL, [])
    assert not may_talk(allowed, BOB, [])  # an allow list exists and bob is not on it
    assert not may_talk(allowed, ALICE, [MODS, MUTED])  # allowed by role, blocked by role: block wins
    assert not may_talk(allowed, CAROL, [MUTED])  # allowed as a member, blocked by role


def test_refusals_in_order_paused_where_name_who() -> None:
    listed = effective(GuildChoices(reply_mode="channels", reply_channels=frozenset({GENERAL})), DEFAULTS)
    assert refusal(listed, asker(channel=GENERAL), paused=False) is None
    assert refusal(listed, asker(channel=RANDOM), paused=False) is Refusal.CHANNEL_NOT_LISTED
    thread = asker(channel=THREAD_OF_GENERAL, parent_id=GENERAL)
    assert refusal(listed, thread, paused=False) is None  # a listed channel's threads count
    assert refusal(listed, asker(channel=GENERAL), paused=True) is Refusal.PAUSED
    nowhere = effective(GuildChoices(reply_mode="nowhere"), DEFAULTS)
    assert refusal(nowhere, asker(), paused=False) is Refusal.LISTEN_ONLY
    quiet_name = effective(GuildChoices(reply_to_name=False), DEFAULTS)
    assert refusal(quiet_name, asker(by_name_only=True), paused=False) is Refusal.NAME_OFF
    assert refusal(quiet_name, asker(by_name_only=False), paused=False) is None  # a mention still works
    blocked = effective(GuildChoices(block_members=frozenset({ALICE})), DEFAULTS)
    assert refusal(blocked, asker(), paused=False) is Refusal.BLOCKED
    allow = effective(GuildChoices(allow_members=frozenset({BOB})), DEFAULTS)
    assert refusal(allow, asker(), paused=False) is Refusal.NOT_ALLOWED
    assert refusal(allow, asker(author=BOB), paused=False) is None


@pytest.mark.parametrize(
    ("spent", "budget", "level"),
    [
        ("0", "10", BudgetLevel.OK),
        ("7.99", "10", BudgetLevel.OK),
        ("8.00", "10", BudgetLevel.WARN),  # 80% exactly
        ("9.99", "10", BudgetLevel.WARN),
        ("10.00", "10", BudgetLevel.OVER),
        ("50", None, BudgetLevel.OK),
        ("50", "0", BudgetLevel.OK),
    ],
)
def test_budget_levels_at_80_and_100_percent(spent: str, budget: str | None, level: BudgetLevel) -> None:
    assert budget_level(Decimal(spent), Decimal(budget) if budget is not None else None) is level


def test_the_dm_share_of_the_host_budget() -> None:
    assert dm_budget(Decimal("40"), 0.25) == Decimal("10.00")
    assert dm_budget(None, 0.25) is None and dm_budget(Decimal("0"), 0.5) is None


def test_months_in_the_servers_time_zone() -> None:
    # 23:30 UTC on 31 Jan is already 1 Feb in Tokyo (UTC+9).
    now = datetime(2026, 1, 31, 23, 30, tzinfo=UTC)
    assert month_key(now, "UTC") == "2026-01" and month_key(now, "Asia/Tokyo") == "2026-02"
    start = month_start(now, "Asia/Tokyo")
    assert start.astimezone(UTC) == datetime(2026, 1, 31, 15, 0, tzinfo=UTC)


def test_time_zone_names_as_people_type_them() -> None:
    assert valid_timezone("Europe/Stockholm") == "Europe/Stockholm"
    assert valid_timezone(" America/New_York ") == "America/New_York"
    for bad in ("CEST", "Mars/Olympus", "", "../etc/passwd", "Europe/", "\x00"):
        assert valid_timezone(bad) is None, bad
