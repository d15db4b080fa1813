"""A server's effective policy: its own choices (/settings, in the guild settings store) over
the host's defaults (the environment's settings), by the pure rules of
memory/policy/guild_policy.py. Read by the reply gate and by /settings."""

from __future__ import annotations

from decimal import Decimal

from bot.services import Services
from bot.settings import Settings
from memory import GuildSettingsStore
from memory.policy.guild_policy import Defaults, Policy, effective


def defaults_from(settings: Settings) -> Defaults:
    budget = settings.guild_monthly_budget_usd
    return Defaults(
        reply_to_name=settings.reply_to_name,
        model=settings.reply_model,
        allowed_models=tuple(settings.reply_models()),
        timezone=settings.timezone,
        monthly_budget_usd=Decimal(str(budget)) if budget is not None else None,
    )


def store_of(services: Services) -> GuildSettingsStore:
    """The one store of a bot process (the reply gate and /settings share it)."""
    store: GuildSettingsStore = services.engine.guild_settings
    return store


async def policy_of(services: Services, guild_id: int) -> Policy:
    return effective(await store_of(services).choices(guild_id), defaults_from(services.settings))
