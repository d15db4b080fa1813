"""This month's spend forecast from the ledger's pace, and the budget warning it triggers: pure,
every figure worked out by hand below (March has 31 days, February 2026 28)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from memory.policy.guild_policy import BudgetLevel, budget_level, forecast, month_start, pace_since

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
BUDGET = Decimal("10")


def test_the_first_day_of_a_month_is_rough_and_warns_nobody() -> None:
    now = datetime(2026, 3, 1, 18, 0, tzinfo=UTC)  # 0.75 days in; one busy evening: $2
    assert pace_since(now, MARCH) == MARCH  # the window never reaches into February
    guess = forecast(Decimal("2"), Decimal("2"), now, MARCH)
    # $2 in 0.75 days is $2.667 a day; 30.25 days left: 2 + 80.67 = $82.67.
    assert guess.month_total == Decimal("82.67") and guess.days_in_month == 31
    assert guess.sureness == "rough" and not guess.trusted
    assert budget_level(guess.spent, BUDGET, guess) is BudgetLevel.OK  # 20% spent, a guess too early
    assert "rough: 1 day of spending" in guess.describe()


def test_a_quiet_month_stays_under_its_budget() -> None:
    now = datetime(2026, 3, 20, tzinfo=UTC)  # 19 days in; $3 so far, $0.70 of it in the last 7 days
    assert pace_since(now, MARCH) == datetime(2026, 3, 13, tzinfo=UTC)
    guess = forecast(Decimal("3"), Decimal("0.70"), now, MARCH)
    # $0.10 a day for the 12 days left: $4.20.
    assert guess.month_total == Decimal("4.20") and guess.sureness == "steady"
    assert budget_level(guess.spent, BUDGET, guess) is BudgetLevel.OK


def test_a_month_heading_over_its_budget_warns_before_80_percent_is_spent() -> None:
    now = datetime(2026, 3, 10, tzinfo=UTC)  # 9 days in; $4 spent (40%), $3.50 in the last week
    guess = forecast(Decimal("4"), Decimal("3.50"), now, MARCH)
    # $0.50 a day for the 22 days left: 4 + 11 = $15.00, over the $10 budget.
    assert guess.month_total == Decimal("15.00") and guess.sureness == "steady"
    assert budget_level(guess.spent, BUDGET, guess) is BudgetLevel.WARN
    assert budget_level(guess.spent, BUDGET) is BudgetLevel.OK  # the spend alone: 40%
    assert budget_level(guess.spent, None, guess) is BudgetLevel.OK  # no budget, no warning
    # Four days in, the same pace is "fair" (under a week of spending) and warns already.
    early = forecast(Decimal("2"), Decimal("2"), datetime(2026, 3, 5, tzinfo=UTC), MARCH)
    assert early.month_total == Decimal("15.50") and early.sureness == "fair"  # 2 + 0.5 x 27
    assert budget_level(early.spent, BUDGET, early) is BudgetLevel.WARN


def test_february_has_28_days_and_a_local_month_starts_at_local_midnight() -> None:
    now = datetime(2026, 2, 15, tzinfo=UTC)
    february = month_start(now, "UTC")
    guess = forecast(Decimal("7"), Decimal("3.50"), now, february)
    assert guess.days_in_month == 28 and guess.month_total == Decimal("14.00")  # 14 days in: 7 + 0.5 x 14
    stockholm = month_start(datetime(2026, 2, 28, 23, 30, tzinfo=UTC), "Europe/Stockholm")
    assert stockholm.isoformat() == "2026-03-01T00:00:00+01:00"  # already March there
    assert (
        forecast(Decimal(0), Decimal(0), datetime(2026, 2, 28, 23, 30, tzinfo=UTC), stockholm).days_in_month
        == 31
    )
