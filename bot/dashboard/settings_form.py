"""The settings page: the same fields as `/settings` (bot/commands/settings.py), the form that
shows them and the pure reading of what was posted. A value is checked by the rules /settings
applies (an allowed model, an IANA zone, a budget of 0 or more); only the fields that changed
are written, so the audit list says what someone actually changed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from bot.dashboard.html import esc
from memory.policy.guild_policy import REPLY_MODES, GuildChoices, Policy, valid_timezone

LISTS = {
    "reply_channels": "reply channels",
    "allow_roles": "allowed roles",
    "block_roles": "blocked roles",
    "allow_members": "allowed members",
    "block_members": "blocked members",
}
MAX_BUDGET = Decimal(1_000_000)  # /settings budget's range


@dataclass
class Posted:
    """What a settings form asks to change: scalar values (None = the host's default), or one
    list entry, or one sentence naming what to fix."""

    values: dict[str, Any] = field(default_factory=dict)
    list_change: tuple[str, int, bool] | None = None  # (column, id, add)
    problem: str | None = None


def read_scalars(form: Mapping[str, str], choices: GuildChoices, allowed_models: list[str]) -> Posted:
    """The scalar fields of the form, compared with what the server chose."""
    wanted: dict[str, Any] = {}
    mode = form.get("reply_mode", "default")
    if mode not in (*REPLY_MODES, "default"):
        return Posted(problem=f"Replies must be one of {', '.join(REPLY_MODES)}, or default.")
    wanted["reply_mode"] = None if mode == "default" else mode
    name = form.get("reply_to_name", "default")
    if name not in ("on", "off", "default"):
        return Posted(problem="The name trigger is on, off or default.")
    wanted["reply_to_name"] = None if name == "default" else name == "on"
    model = form.get("model", "default").strip()
    if model != "default" and model not in allowed_models:
        return Posted(
            problem=f"{model!r} is not a model the host allows; pick one of: {', '.join(allowed_models)}."
        )
    wanted["model"] = None if model == "default" else model
    zone = form.get("timezone", "").strip()
    if zone and zone != "default":
        checked = valid_timezone(zone)
        if checked is None:
            return Posted(problem=f"{zone!r} is not an IANA time zone name; use one like Europe/Stockholm.")
        wanted["timezone"] = checked
    else:
        wanted["timezone"] = None
    budget = form.get("monthly_budget_usd", "").strip().lstrip("$")
    if budget and budget != "default":
        try:
            amount = Decimal(budget).quantize(Decimal("0.01"))
        except InvalidOperation:
            return Posted(problem=f"{budget!r} is not an amount of dollars; write it like 12.50.")
        if not 0 <= amount <= MAX_BUDGET:
            return Posted(problem="The budget is from 0 (no budget) to 1,000,000 dollars.")
        wanted["monthly_budget_usd"] = amount
    else:
        wanted["monthly_budget_usd"] = None
    changed = {k: v for k, v in wanted.items() if getattr(choices, k) != v}
    return Posted(values=changed)


def read_list(form: Mapping[str, str]) -> Posted:
    column = form.get("list", "")
    if column not in LISTS:
        return Posted(problem="Pick which list to change.")
    raw = form.get("id", "").strip().strip("<>#@&!")
    if not raw.isdigit() or not 0 < int(raw) < 2**63:
        return Posted(problem="Give the channel, role or member as its Discord id (a number).")
    return Posted(list_change=(column, int(raw), form.get("action") != "remove"))


def _option(value: str, label: str, chosen: str) -> str:
    selected = " selected" if value == chosen else ""
    return f'<option value="{esc(value)}"{selected}>{esc(label)}</option>'


def settings_form(
    choices: GuildChoices,
    policy: Policy,
    allowed_models: list[str],
    csrf: str,
    name_of: Callable[[str, int], str],
) -> str:
    """The form, with the server's choices filled in ("default" where it follows the host)."""
    hidden = f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
    modes = "".join(_option(m, m, choices.reply_mode or "default") for m in (*REPLY_MODES, "default"))
    trigger_now = "default" if choices.reply_to_name is None else ("on" if choices.reply_to_name else "off")
    names = "".join(_option(v, v, trigger_now) for v in ("on", "off", "default"))
    models = "".join(_option(m, m, choices.model or "default") for m in (*allowed_models, "default"))
    budget = "" if choices.monthly_budget_usd is None else f"{choices.monthly_budget_usd:.2f}"
    scalars = (
        f'<form method="post" id="settings">{hidden}'
        f'<label>Replies <select name="reply_mode">{modes}</select> (now: {esc(policy.reply_mode)})</label>'
        f'<label>My name makes me reply <select name="reply_to_name">{names}</select>'
        f" (now: {'yes' if policy.reply_to_name else 'no'})</label>"
        f'<label>Model <select name="model">{models}</select> (now: {esc(policy.model)})</label>'
        f'<label>Time zone <input name="timezone" value="{esc(choices.timezone or "")}"'
        f' placeholder="default: {esc(policy.timezone)}"></label>'
        f'<label>Monthly budget, USD <input name="monthly_budget_usd" value="{esc(budget)}"'
        ' placeholder="default" inputmode="decimal"></label>'
        '<button type="submit" name="form" value="scalars">Save</button></form>'
    )
    lists = []
    for column, label in LISTS.items():
        kind = "channel" if column == "reply_channels" else ("role" if column.endswith("roles") else "member")
        items = sorted(getattr(policy, column))
        shown = ", ".join(esc(name_of(kind, item)) for item in items) or "none"
        lists.append(f"<li>{esc(label)}: {shown}</li>")
    options = "".join(_option(c, label, "") for c, label in LISTS.items())
    list_form = (
        f'<form method="post" id="lists">{hidden}<select name="list">{options}</select>'
        ' <input name="id" placeholder="Discord id" inputmode="numeric"> '
        '<button type="submit" name="action" value="add">Add</button> '
        '<button type="submit" name="action" value="remove">Remove</button></form>'
    )
    return scalars + "<h2>Lists</h2><ul>" + "".join(lists) + "</ul>" + list_form
