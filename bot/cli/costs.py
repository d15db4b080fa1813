"""`eva stats` without `--chat`: every chat with its message count and cost at list price, and
this month's total against the host-wide budget (MONTHLY_BUDGET_USD)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from bot.settings import Settings
from memory import MemoryEngine
from memory.policy.guild_policy import BudgetLevel, Forecast, budget_level


@dataclass(frozen=True, slots=True)
class ChatCost:
    name: str
    kind: str
    messages: int
    total: Decimal  # all time
    month: Decimal  # since the 1st


@dataclass(frozen=True, slots=True)
class CostReport:
    chats: list[ChatCost]
    month_from: datetime
    timezone: str
    month_total: Decimal  # every row this month, erased chats included
    budget: Decimal | None
    forecast: Forecast  # the month's total at the recent pace, every row included


async def chat_costs(engine: MemoryEngine, settings: Settings) -> CostReport:
    now = engine.clock.now()
    since = engine.month_start(now)
    total, month = await engine.cost_by_chat(), await engine.cost_by_chat(since)
    chats = [
        ChatCost(
            chat.name, chat.kind, await engine.message_count(chat.id),
            total.get(chat.id, Decimal(0)), month.get(chat.id, Decimal(0)),
        )
        for chat in await engine.list_chats()
    ]  # fmt: skip
    budget = settings.monthly_budget_usd
    projection = await engine.guild_settings.host_forecast(now, settings.timezone)
    return CostReport(
        chats=chats,
        month_from=since,
        timezone=settings.timezone,
        month_total=projection.spent,
        budget=Decimal(str(budget)) if budget is not None and budget > 0 else None,
        forecast=projection,
    )


def format_costs(report: CostReport) -> str:
    """The listing (pure): one tab-separated line per chat, then the month against the budget."""
    if not report.chats:
        lines = [
            "no chats yet: run the bot (`eva run`), or import a history with `eva import FILE --chat NAME`"
        ]
    else:
        lines = ["chat\tkind\tmessages\tcost\tthis month"]
    for chat in report.chats:
        lines.append(f"{chat.name}\t{chat.kind}\t{chat.messages}\t${chat.total:.4f}\t${chat.month:.4f}")
    head = f"This month (since {report.month_from:%Y-%m-%d} {report.timezone}): ${report.month_total:.2f}"
    ahead = report.forecast.describe()
    if report.budget is None:
        lines.append(f"{head}, {ahead}; no MONTHLY_BUDGET_USD set.")
    else:
        percent = int(report.month_total * 100 / report.budget)
        level = budget_level(report.month_total, report.budget, report.forecast)
        state = " Replies are paused until the 1st." if level is BudgetLevel.OVER else ""
        if level is BudgetLevel.WARN and report.forecast.month_total >= report.budget:
            state = " At this pace the budget runs out before the month ends."
        lines.append(f"{head} of the ${report.budget:.2f} MONTHLY_BUDGET_USD ({percent}%), {ahead}.{state}")
    return "\n".join(lines)
