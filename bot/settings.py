"""Every setting of the bot, read once at start (pydantic-settings) and passed down.

Nothing else reads the environment. Names are the environment variable names; a `.env`
file in the working directory is read too. `.env.example` lists them all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.settings_checks import database_url_problem
from bot.shards import parse_shard_ids
from memory import MemoryConfig
from memory.pricing import ModelPrice, PriceTable, default_prices

DISCORD_API_BASE = "https://discord.com/api/v10"
DISCORD_GATEWAY_URL = "wss://gateway.discord.gg/"
IMAGE_BYTES_CAP = 3_932_160  # base64 of this many bytes is 5,242,880: the API's image cap
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


# The settings that tune the memory, by MemoryConfig field: the same names, but for QUIET and
# RETRY (the .env names predate the config's unit suffixes).
_SAME_NAME = ("node_bytes", "view_high", "view_low", "tail_start", "tail_keep", "tail_force")
_MEMORY_SETTINGS = {"quiet_seconds": "quiet", "retry_seconds": "retry"} | {
    name: name
    for name in (
        *_SAME_NAME,
        "tail_cap",
        "jobs",
        "tries",
        "tasks_per_call",
        "timezone",
        "people_cards",
        "people_days",
        "people_bytes",
    )
}


ENV_FILE = ".env"  # in the working folder; read whole by pydantic-settings (size: bot/cli/main.py)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=ENV_FILE, extra="ignore", case_sensitive=False)

    # --- secrets and endpoints
    discord_token: SecretStr | None = None
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str | None = None  # unset: Anthropic's own API
    anthropic_timeout: float = 60.0  # seconds per model call
    anthropic_max_retries: int = 2  # the SDK's own retries, for replies only
    discord_api_base: str = DISCORD_API_BASE
    discord_gateway_url: str = DISCORD_GATEWAY_URL

    # --- storage
    database_url: SecretStr | None = None  # unset: an embedded PostgreSQL under DATA_DIR
    data_dir: Path = Path(".data")

    # --- the bot
    bot_name: str = "Eva"
    persona_file: Path | None = None
    reply_to_name: bool = True  # answer when the bot's name appears as a word
    reply_in_dms: bool = True
    ignore_bots: bool = True
    reply_model: str = "claude-sonnet-5-5"
    compact_model: str = "claude-haiku-5-5"
    reply_max_tokens: int = 1024
    tool_steps: int = 6  # model calls per reply turn, tool calls included
    tool_result_bytes: int = 8000  # cap on one tool result sent back to the model
    debounce_seconds: float = 1.5
    user_cooldown_seconds: float = 10.0
    # Join-in channels (/settings join-in): at most one unprompted reply per channel this often.
    join_in_cooldown: float = Field(default=600.0, ge=0)
    guild_monthly_reply_cap: int = 0  # 0 = off
    # Keep-warm pings (bot/core/keep_warm.py): at most this many hours after a chat's last turn,
    # the horizon chosen per chat from its gaps; 0 = off. 24 lets a friend group's night through.
    keep_warm_hours: float = Field(default=24.0, ge=0)
    prices: dict[str, ModelPrice] = Field(default_factory=default_prices)

    # --- the memory (docs/design.md section 7); sizes in bytes, times in seconds
    node_bytes: int = 512
    view_high: int = 96_000
    view_low: int = 48_000
    tail_start: int = 48_000
    tail_keep: int = 12_000
    tail_force: int = 96_000
    tail_cap: int = 160_000
    quiet: float = 1800.0
    jobs: int = 8
    tries: int = 5
    retry: float = 10.0
    tasks_per_call: int = 6
    timezone: str = "UTC"
    people_cards: int = 12  # cards of the most active people of a chat; 0: no cards
    people_days: int = 30  # the activity window the cards' people are picked in
    people_bytes: int = 4_000  # the most the cards take in a reply prompt

    # --- logging
    log_format: Literal["json", "console"] = "console"
    log_level: str = "INFO"  # one of LOG_LEVELS, any case

    # --- health (the container's HEALTHCHECK runs `eva health`, which reads this file)
    health_file: Path | None = None  # unset: no heartbeat; the Docker image sets one under /tmp
    health_interval: float = 15.0  # seconds between heartbeats; `eva health` allows 4 missed

    # --- reconciliation with Discord (bot/gateway/reconcile.py)
    reconcile_recent: float = 86_400.0  # after a reconnect: the day before the outage, and since
    reconcile_period: float = 2_592_000.0  # the background walk covers each chat's history every 30 days
    reconcile_tick: float = 60.0  # seconds between the walk's looks for due pages
    # --- per-server settings and spending (docs/design.md, running it); appended here, the
    # per-server values live in the database and default to these
    allowed_reply_models: str = ""  # comma-separated; empty: REPLY_MODEL only
    guild_monthly_budget_usd: float | None = None  # a server's default monthly budget; unset = none
    monthly_budget_usd: float | None = None  # host-wide, every server and DM together; unset = none
    dm_budget_share: float = 0.25  # of MONTHLY_BUDGET_USD, what all DMs together may spend
    dm_daily_reply_cap: int = 20  # replies per person per day in DMs; 0 = no cap
    # --- several gateway processes (bot/shards.py): this process's shards of SHARD_COUNT
    shard_count: int | None = None  # unset: one connection for every guild (up to 2,500 guilds)
    shard_ids: str | None = None  # e.g. "0-3" or "0,2"; unset with SHARD_COUNT: all of them

    def shard_plan(self) -> tuple[int | None, tuple[int, ...] | None]:
        """(SHARD_COUNT, SHARD_IDS parsed); call after :meth:`problems` found none."""
        return self.shard_count, parse_shard_ids(self.shard_ids) if self.shard_ids else None

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    @field_validator("log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        # A typo such as LOG_LEVEL=verbose used to become INFO silently: a person who asked for
        # more detail would never know they did not get it.
        if value.upper() not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return value.upper()

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        problem = database_url_problem(value.get_secret_value() if value is not None else "")
        if problem is not None:
            raise ValueError(problem)
        return value

    def memory_config(self) -> MemoryConfig:
        return MemoryConfig(**{field: getattr(self, setting) for field, setting in _MEMORY_SETTINGS.items()})

    def reply_models(self) -> list[str]:
        """The models a server may pick with /settings model; REPLY_MODEL is always one."""
        listed = [name.strip() for name in self.allowed_reply_models.split(",") if name.strip()]
        return list(dict.fromkeys([self.reply_model, *listed]))

    def price_table(self) -> PriceTable:
        return PriceTable(dict(self.prices))

    def missing_for_run(self) -> list[str]:
        """Required settings that `eva run` cannot start without."""
        missing = []
        if not self.discord_token or not self.discord_token.get_secret_value():
            missing.append("DISCORD_TOKEN")
        if not self.anthropic_api_key or not self.anthropic_api_key.get_secret_value():
            missing.append("ANTHROPIC_API_KEY")
        return missing

    def problems(self) -> list[str]:
        """Settings that are present but inconsistent, one sentence each."""
        out = []
        if not 0 < self.view_low < self.view_high:
            out.append("VIEW_LOW must be above 0 and below VIEW_HIGH")
        if not 0 < self.tail_keep < self.tail_start <= self.tail_force <= self.tail_cap:
            out.append("need 0 < TAIL_KEEP < TAIL_START <= TAIL_FORCE <= TAIL_CAP")
        if self.node_bytes < 64:
            out.append("NODE_BYTES below 64 leaves no room for a useful line")
        if self.jobs < 1 or self.tries < 1:
            out.append("JOBS and TRIES must be at least 1")
        if self.people_cards < 0 or self.people_days < 1 or self.people_bytes < 0:
            out.append("PEOPLE_CARDS and PEOPLE_BYTES cannot be negative, and PEOPLE_DAYS must be at least 1")
        if self.reconcile_recent < 0 or self.reconcile_period < 0:
            out.append("RECONCILE_RECENT and RECONCILE_PERIOD cannot be negative")
        if self.reconcile_tick <= 0:
            out.append("RECONCILE_TICK must be above 0")
        for name in ("guild_monthly_budget_usd", "monthly_budget_usd"):
            value = getattr(self, name)
            if value is not None and value < 0:
                out.append(f"{name.upper()} cannot be negative")
        if not 0 <= self.dm_budget_share <= 1:
            out.append("DM_BUDGET_SHARE must be between 0 and 1")
        for name in ("dashboard_port", "metrics_port"):
            port = getattr(self, name)
            if port is not None and not 0 <= port <= 65535:
                out.append(f"{name.upper()} must be a port number from 0 to 65535")
        if self.dashboard_public_url and not self.dashboard_public_url.startswith(("http://", "https://")):
            out.append("DASHBOARD_PUBLIC_URL must start with https:// (or http://)")
        if self.dm_daily_reply_cap < 0:
            out.append("DM_DAILY_REPLY_CAP cannot be negative")
        out.extend(self.shard_problems())
        if not 0 < self.image_max_bytes <= IMAGE_BYTES_CAP:
            out.append(f"IMAGE_MAX_BYTES must be above 0 and at most {IMAGE_BYTES_CAP} (5 MB in base64)")
        return out

    def shard_problems(self) -> list[str]:
        if self.shard_count is not None and self.shard_count < 1:
            return ["SHARD_COUNT must be at least 1"]
        if not self.shard_ids:
            return []
        if self.shard_count is None:
            return ["SHARD_IDS needs SHARD_COUNT (the shards of how many?)"]
        try:
            ids = parse_shard_ids(self.shard_ids)
        except ValueError as exc:
            return [f"SHARD_IDS: {exc}"]
        if ids[-1] >= self.shard_count:
            top = self.shard_count - 1
            return [
                f"SHARD_IDS goes up to {ids[-1]}, but SHARD_COUNT={self.shard_count} has shards 0 to {top}"
            ]
        return []

    # --- the reply turn's files and streaming (docs/design.md, the reply turn)
    stream_replies: bool = True  # show the reply growing, edited at most every 1.5 s
    # 3.9 MB: base64 makes it 5.2 MB, under the API's 5 MB (5,242,880-byte) cap on an image.
    image_max_bytes: int = 3_900_000
    image_max_count: int = 4  # images per reply turn (the API takes up to 100)
    text_file_max_bytes: int = 40_000  # per text file read into a turn (~10k tokens)

    # --- the web dashboard and /metrics (bot/dashboard/; docs/design.md, the dashboard)
    dashboard_port: int | None = None  # unset: no dashboard
    dashboard_host: str = "127.0.0.1"  # a reverse proxy in front adds TLS; 0.0.0.0 only behind one
    dashboard_public_url: str | None = None  # the links' base behind a proxy, e.g. https://eva.example
    metrics_port: int | None = None  # /metrics alone (without the dashboard), on DASHBOARD_HOST

    def dashboard_base(self) -> str:
        """Where the dashboard's sign-in links point."""
        if self.dashboard_public_url:
            return self.dashboard_public_url.rstrip("/")
        return f"http://{self.dashboard_host}:{self.dashboard_port or 0}"
