"""The join-in check's meter (bench/join_in.py): it checks what the bot would check, keeps the
bot's cooldown and default, and its figures add up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bench import join_in
from bench.join_in import COOLDOWN, JoinInMeter
from bot.settings import Settings
from memory import ImportedMessage, PromptView

T0 = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)


def record(minute: float, text: str, is_bot: bool = False) -> ImportedMessage:
    at = T0 + timedelta(minutes=minute)
    return ImportedMessage(None, "ann", is_bot, at, None, text, (), None, None, None)


def test_the_meter_checks_questions_outside_the_cooldown_and_prices_them(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert COOLDOWN.total_seconds() == Settings(_env_file=None).join_in_cooldown  # type: ignore[call-arg]
    monkeypatch.setattr(join_in, "_draw", lambda index: 0.0 if index == 1 else 1.0)  # only #1 says yes
    now = [T0.timestamp()]
    meter = JoinInMeter("claude-haiku-4-5", lambda: now[0])
    view = PromptView(
        1, total=3, boundary=0, timezone="UTC", tail_lines=["#0 ann: hi", "#1 ann: when is padel?"]
    )
    stream = [
        record(0, "hello all"),  # not asking
        record(1, "when is padel?"),  # checked, yes: cooldown to minute 11
        record(2, "who brings rackets?"),  # cooling down
        record(3, "is it on?", is_bot=True),  # a bot's
        record(12, "anyone know the court number"),  # checked again
    ]
    for index, message in enumerate(stream):
        if meter.wants(message):
            meter.account(index, message, view)
    figures = meter.figures(reply_usd_per_turn=0.02)
    assert meter.meter.totals.requests == 2 and meter.yes == 1
    assert figures["join_in_checks_per_1k_messages"] == 400.0  # 2 of 5 messages
    assert figures["join_in_asking_share"] == 0.6  # 3 of 5 pass the pre-filter (the bot's excluded)
    assert figures["join_in_check_usd_per_1k_messages"] > 0
    assert figures["join_in_reply_usd_per_1k_messages"] == round(200 * 0.02, 4)
