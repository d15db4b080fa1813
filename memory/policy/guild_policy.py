"""Who Eva answers, where, with which model, and whether the money allows it: pure functions
over plain data (no Discord, no database), so every rule is tested without either.

A server's choices (/settings) override the host's defaults (environment settings); a choice
left unset follows the default, also when the host changes it later. Access lists work like
llmcord's ``permissions``: a block (member or role) always wins; when either allow list is
non-empty, only the members and roles on them are answered.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

REPLY_MODES = ("everywhere", "channels", "nowhere")
WARN_SHARE = Decimal("0.8")  # the admins hear about the budget once 80% of it is spent


@dataclass(frozen=True, slots=True)
class Defaults:
    """The host's defaults, from the environment settings."""

    reply_to_name: bool
    model: str
    allowed_models: tuple[str, ...]
    timezone: str
    monthly_budget_usd: Decimal | None  # a server's budget unless it sets its own; None = none


@dataclass(frozen=True, slots=True)
class GuildChoices:
    """What a server chose; None means "the host's default"."""

    reply_mode: str | None = None
    reply_channels: frozenset[int] = frozenset()
    join_in_channels: frozenset[int] = frozenset()
    reply_to_name: bool | None = None
    allow_roles: frozenset[int] = frozenset()
    block_roles: frozenset[int] = frozenset()
    allow_members: frozenset[int] = frozenset()
    block_members: frozenset[int] = frozenset()
    model: str | None = None
    timezone: str | None = None
    monthly_budget_usd: Decimal | None = None  # 0 = explicitly no budget
    alert_channel_id: int | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    """A server's effective settings: its choices with the defaults filled in."""

    reply_mode: str
    reply_channels: frozenset[int]
    reply_to_name: bool
    allow_roles: frozenset[int]
    block_roles: frozenset[int]
    allow_members: frozenset[int]
    block_members: frozenset[int]
    model: str
    timezone: str
    monthly_budget_usd: Decimal | None  # None: no budget
    alert_channel_id: int | None = None
    overridden: frozenset[str] = field(default_factory=frozenset)  # names the server chose
    join_in_channels: frozenset[int] = frozenset()  # where Eva may answer unasked (off: none)


def effective(choices: GuildChoices, defaults: Defaults) -> Policy:
    """Fill the unset choices from the defaults. A model the host no longer allows falls back
    to the default model rather than keep spending on one the host took off the list."""
    overridden = {
        name
        for name in ("reply_mode", "reply_to_name", "model", "timezone", "monthly_budget_usd")
        if getattr(choices, name) is not None
    }
    model = choices.model if choices.model in defaults.allowed_models else defaults.model
    budget = defaults.monthly_budget_usd if choices.monthly_budget_usd is None else choices.monthly_budget_usd
    return Policy(
        reply_mode=choices.reply_mode or "everywhere",
        reply_channels=choices.reply_channels,
        reply_to_name=defaults.reply_to_name if choices.reply_to_name is None else choices.reply_to_name,
        allow_roles=choices.allow_roles,
        block_roles=choices.block_roles,
        allow_members=choices.allow_members,
        block_members=choices.block_members,
        model=model,
        timezone=choices.timezone or defaults.timezone,
        monthly_budget_usd=budget if budget is not None and budget > 0 else None,
        alert_channel_id=choices.alert_channel_id,
        overridden=frozenset(overridden),
        join_in_channels=choices.join_in_channels,
    )


@dataclass(frozen=True, slots=True)
class Asker:
    """A message that would trigger a reply, as plain ids."""

    author_id: int
    role_ids: frozenset[int]
    channel_id: int
    parent_id: int | None = None  # a thread's channel: a listed channel covers its threads
    by_name_only: bool = False  # triggered only by the bot's name (no mention, no reply)
    unprompted: bool = False  # not addressed at all: a join-in channel's check said yes


class Refusal(enum.Enum):
    """Why a trigger gets no reply. All of these are silent: nobody is told off in public."""

    PAUSED = "paused"  # /memory pause: neither logged nor answered
    LISTEN_ONLY = "listen_only"
    CHANNEL_NOT_LISTED = "channel_not_listed"
    NAME_OFF = "name_off"
    BLOCKED = "blocked"
    NOT_ALLOWED = "not_allowed"
    NOT_JOIN_IN = "not_join_in"  # unprompted, in a channel not listed for joining in


def is_blocked(policy: Policy, author_id: int, role_ids: Iterable[int]) -> bool:
    return author_id in policy.block_members or bool(frozenset(role_ids) & policy.block_roles)


def may_talk(policy: Policy, author_id: int, role_ids: Iterable[int]) -> bool:
    """llmcord's rule: blocked (member or any role) never; with an allow list, only those on it."""
    roles = frozenset(role_ids)
    if is_blocked(policy, author_id, roles):
        return False
    if not (policy.allow_members or policy.allow_roles):
        return True
    return author_id in policy.allow_members or bool(roles & policy.allow_roles)


def refusal(policy: Policy, asker: Asker, *, paused: bool) -> Refusal | None:
    """Why this trigger gets no reply in this server, or None when it may get one."""
    if paused:
        return Refusal.PAUSED
    if policy.reply_mode == "nowhere":
        return Refusal.LISTEN_ONLY
    if asker.unprompted and not joins_in(policy, asker.channel_id, asker.parent_id):
        return Refusal.NOT_JOIN_IN
    if asker.unprompted:  # listed for joining in: a choice of its own, whatever the reply list says
        return _who_refusal(policy, asker)
    if policy.reply_mode == "channels" and not (
        asker.channel_id in policy.reply_channels or asker.parent_id in policy.reply_channels
    ):
        return Refusal.CHANNEL_NOT_LISTED
    if asker.by_name_only and not policy.reply_to_name:
        return Refusal.NAME_OFF
    return _who_refusal(policy, asker)


def _who_refusal(policy: Policy, asker: Asker) -> Refusal | None:
    if not may_talk(policy, asker.author_id, asker.role_ids):
        # Which of the two, for the log line only.
        blocked = is_blocked(policy, asker.author_id, asker.role_ids)
        return Refusal.BLOCKED if blocked else Refusal.NOT_ALLOWED
    return None


def joins_in(policy: Policy, channel_id: int, parent_id: int | None) -> bool:
    """Is this channel (or a thread's channel) one where Eva may answer unasked?"""
    return channel_id in policy.join_in_channels or parent_id in policy.join_in_channels


# --- money -----------------------------------------------------------------------------------


class BudgetLevel(enum.Enum):
    OK = "ok"
    WARN = "warn"  # 80% or more spent: tell the admins (once a month)
    OVER = "over"  # all spent: replies pause until the month ends (one notice)


def budget_level(spent: Decimal, budget: Decimal | None, forecast: Forecast | None = None) -> BudgetLevel:
    """OVER once the budget is spent; WARN once 80% of it is, or once a forecast sure enough to
    act on (``Forecast.trusted``) puts the month's total at the budget or over."""
    if budget is None or budget <= 0:
        return BudgetLevel.OK
    if spent >= budget:
        return BudgetLevel.OVER
    if spent >= budget * WARN_SHARE:
        return BudgetLevel.WARN
    if forecast is not None and forecast.trusted and forecast.month_total >= budget:
        return BudgetLevel.WARN
    return BudgetLevel.OK


# The pace is the spend of the last PACE_DAYS days (fewer at the month's start): a week holds
# every weekday, so a busy weekend neither doubles nor halves it, and it follows a server that
# grew quieter since the 1st sooner than the month's average would.
PACE_DAYS = 7
# Under 3 days of spending, a forecast is shown as rough and warns nobody: one evening's long
# conversation on the 1st, at a friend group's ~$0.02-0.04 a reply, would project to the whole
# month at ~30x. From 7 days on the pace spans a whole week.
SURE_AFTER_DAYS = 3
STEADY_AFTER_DAYS = PACE_DAYS


@dataclass(frozen=True, slots=True)
class Forecast:
    """This month's spend so far, and its total by the month's end at the recent pace."""

    spent: Decimal
    month_total: Decimal
    days_elapsed: float
    days_in_month: int

    @property
    def trusted(self) -> bool:
        """Sure enough to warn on: at least SURE_AFTER_DAYS of the month behind it."""
        return self.days_elapsed >= SURE_AFTER_DAYS

    @property
    def sureness(self) -> str:
        """How sure, in words a host reads: "rough", "fair" or "steady"."""
        if not self.trusted:
            return "rough"
        return "fair" if self.days_elapsed < STEADY_AFTER_DAYS else "steady"

    def describe(self) -> str:
        days = f"{self.days_elapsed:.0f} day{'' if round(self.days_elapsed) == 1 else 's'}"
        pace = f"about ${self.month_total:.2f} by the month's end at this pace"
        return f"{pace} ({self.sureness}: {days} of spending)"


def pace_since(now: datetime, month_from: datetime) -> datetime:
    """Where the pace's window starts: PACE_DAYS back, not before the month's 1st."""
    return max(month_from, now - timedelta(days=PACE_DAYS))


def forecast(spent: Decimal, recent: Decimal, now: datetime, month_from: datetime) -> Forecast:
    """``spent`` since ``month_from`` (the 1st, local midnight), ``recent`` since
    ``pace_since(now, month_from)``: the month's total if the recent pace holds."""
    next_month = (month_from.replace(day=28) + timedelta(days=4)).replace(day=1)
    days_in_month = (next_month.date() - month_from.date()).days
    elapsed = max((now - month_from).total_seconds() / 86_400, 0.0)
    window = (now - pace_since(now, month_from)).total_seconds() / 86_400
    per_day = recent / Decimal(str(window)) if window > 0 else Decimal(0)
    left = max(days_in_month - elapsed, 0.0)
    total = (spent + per_day * Decimal(str(left))).quantize(Decimal("0.01"))
    return Forecast(spent, total, elapsed, days_in_month)


def dm_budget(host_budget: Decimal | None, share: float) -> Decimal | None:
    """What all DMs together may spend in a month: their share of the host-wide budget."""
    if host_budget is None or host_budget <= 0:
        return None
    return (host_budget * Decimal(str(share))).quantize(Decimal("0.01"))


def month_key(now: datetime, timezone: str) -> str:
    """ "YYYY-MM" of ``now`` in ``timezone``: the once-a-month marks of the budget notices."""
    return now.astimezone(ZoneInfo(timezone)).strftime("%Y-%m")


def month_start(now: datetime, timezone: str) -> datetime:
    """Midnight on the 1st of ``now``'s month in ``timezone`` (an aware datetime)."""
    local = now.astimezone(ZoneInfo(timezone))
    return local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def day_start(now: datetime, timezone: str) -> datetime:
    local = now.astimezone(ZoneInfo(timezone))
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def valid_timezone(name: str) -> str | None:
    """The IANA name, or None when it is not one (``Europe/Stockholm`` yes, ``CEST`` no)."""
    name = name.strip()
    if not name or name != name.strip("/") or ".." in name:
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return name
