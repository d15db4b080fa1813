"""The dashboard's pure rules without a database or Discord: who may open what, the settings
form's reading of what was posted, and the lines of a row as the page draws them."""

from __future__ import annotations

from decimal import Decimal

from bot.dashboard.access import Session, Sessions, Verdict, csrf_ok, verdict
from bot.dashboard.pages import line_item, zoom_fragment
from bot.dashboard.settings_form import read_list, read_scalars
from memory.policy.guild_policy import GuildChoices

MODELS = ["claude-sonnet-5-5", "claude-haiku-5-5"]


def member(guild_id: int = 1, user_id: int = 10) -> Session:
    return Session("key", "csrf", guild_id, user_id, 1e18)


def test_verdicts() -> None:
    yes, no = (lambda g, u: True), (lambda g, u: False)
    assert verdict(None, 1, yes) is Verdict.SIGNED_OUT
    assert verdict(member(), 1, yes) is Verdict.ALLOWED
    assert verdict(member(), 2, yes) is Verdict.OTHER_SERVER
    assert verdict(member(), 1, no) is Verdict.NOT_MANAGER
    assert verdict(member(), None, yes) is Verdict.HOST_ONLY
    host = Session("k", "c", None, None, 1e18)
    assert verdict(host, 1, no) is Verdict.ALLOWED and verdict(host, None, no) is Verdict.ALLOWED


def test_sessions_expire_and_tokens_compare_exactly() -> None:
    now = [0.0]
    sessions = Sessions(clock=lambda: now[0])
    opened = sessions.open(1, 10)
    assert (
        sessions.find(opened.key) == opened and sessions.find("other") is None and sessions.find(None) is None
    )
    assert (
        csrf_ok(opened, opened.csrf) and not csrf_ok(opened, opened.csrf[:-1]) and not csrf_ok(opened, None)
    )
    now[0] = 8 * 3600 + 1
    assert sessions.find(opened.key) is None


def test_the_settings_form_keeps_only_what_changed_and_names_what_to_fix() -> None:
    chosen = GuildChoices(timezone="Europe/Oslo", monthly_budget_usd=Decimal("5.00"))
    form = {"reply_mode": "default", "reply_to_name": "off", "model": "default", "timezone": "Europe/Oslo",
            "monthly_budget_usd": "5"}  # fmt: skip
    assert read_scalars(form, chosen, MODELS).values == {"reply_to_name": False}
    assert read_scalars({**form, "monthly_budget_usd": ""}, chosen, MODELS).values == {
        "reply_to_name": False,
        "monthly_budget_usd": None,
    }
    assert "not an IANA time zone" in (
        read_scalars({**form, "timezone": "Mars/Base"}, chosen, MODELS).problem or ""
    )
    assert "not a model the host allows" in (
        read_scalars({**form, "model": "gpt"}, chosen, MODELS).problem or ""
    )
    assert "not an amount" in (
        read_scalars({**form, "monthly_budget_usd": "lots"}, chosen, MODELS).problem or ""
    )
    assert "from 0" in (read_scalars({**form, "monthly_budget_usd": "-1"}, chosen, MODELS).problem or "")
    assert read_list({"list": "block_members", "id": "<@123>", "action": "add"}).list_change == (
        "block_members", 123, True,
    )  # fmt: skip
    assert read_list({"list": "block_members", "id": "12", "action": "remove"}).list_change == (
        "block_members",
        12,
        False,
    )
    assert (
        read_list({"list": "chats", "id": "1"}).problem
        and read_list({"list": "allow_roles", "id": "x"}).problem
    )


def test_a_line_shows_its_address_dates_size_and_escaped_text() -> None:
    line = "40+8 2026-01-03..2026-01-09|ada: <img src=x onerror=alert(1)> & more"
    item = line_item(line, "/g/1/chat/2/zoom")
    assert 'data-zoom="/g/1/chat/2/zoom?at=40%2B8"' in item
    assert '<span class="addr">40+8</span>' in item and "2026-01-03..2026-01-09 · 68 B" in item
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; more" in item and "<img" not in item
    message = zoom_fragment("#40 2026-01-03 10:00 ada: <script>x</script>", "/z")
    assert message == '<pre class="message">#40 2026-01-03 10:00 ada: &lt;script&gt;x&lt;/script&gt;</pre>'
    halves = zoom_fragment("40+4 2026-01-03|a\n44+4 2026-01-05|b", "/z")
    assert halves.count('class="line"') == 2 and "?at=44%2B4" in halves
