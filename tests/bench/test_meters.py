"""The benchmarks price the bot's own defaults: bench/meters.py types in the compactor model and
composes the system prompt itself (bench/ reads no bot settings, tests/structure/test_layers.py),
so this checks both against bot/settings.py and bot/core/prompts.py."""

from __future__ import annotations

import pytest

from bench.meters import (
    DEFAULT_BOT_NAME,
    DEFAULT_COMPACT_MODEL,
    DEFAULT_KEEP_WARM_HOURS,
    compact_model,
    reply_system_prompt,
)
from bench.tool_steps import TOOL_RESULT_BYTES
from bot.core.prompts import system_prompt
from bot.settings import Settings


def test_the_benchmarks_price_the_default_prompt_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BOT_NAME", "PERSONA_FILE", "COMPACT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert reply_system_prompt() == system_prompt(settings)
    assert (settings.bot_name, settings.compact_model) == (DEFAULT_BOT_NAME, DEFAULT_COMPACT_MODEL)
    assert compact_model() == DEFAULT_COMPACT_MODEL
    assert settings.tool_result_bytes == TOOL_RESULT_BYTES  # the tool steps' results are capped alike
    assert settings.keep_warm_hours == DEFAULT_KEEP_WARM_HOURS  # the pings priced are the bot's
    monkeypatch.setenv("COMPACT_MODEL", "claude-haiku-4-5")
    assert compact_model() == "claude-haiku-4-5"  # as the bot would read it
