"""The join-in check's cost in the replay (bench.replay --turns): every message of the corpus
is taken as a message in a join-in channel, and the check is built exactly as the bot builds
it (bot/core/join_in.py) from the engine's own raw tail, and accounted on the prompt-cache
simulation of the compaction model at the corpus's time.

The model of how often the check runs, printed with the figures:

- a message is checked when it is a person's (not a bot's), reads like a question or a request
  (``may_be_asking``, the bot's own pre-filter) and its channel is not cooling down;
- the check says yes for a fixed-seed draw of YES_SHARE of the checks (the real answer depends
  on the model and the group; 0.1 is a stated guess, and a higher share means fewer checks,
  since each yes starts the cooldown);
- a yes starts JOIN_IN_COOLDOWN (600 s of corpus time), during which nothing is checked;
- the check answers one token.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from bench.cache_model import CacheMeter
from bench.meters import DEFAULT_BOT_NAME
from bot.core.join_in import check_request, may_be_asking
from memory import ImportedMessage, PromptView

YES_SHARE = 0.1
COOLDOWN = timedelta(seconds=600)  # JOIN_IN_COOLDOWN's default (bot/settings.py)
CHECK_OUTPUT_TOKENS = 1
SEED = "eva-join-in-1"


def _draw(index: int) -> float:
    digest = hashlib.sha256(f"{SEED}|{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class JoinInMeter:
    def __init__(self, model: str, clock: Callable[[], float]) -> None:
        self.model = model
        self.meter = CacheMeter(model, clock)
        self.messages = self.asking = self.yes = 0
        self.cooling_until: datetime | None = None

    def wants(self, record: ImportedMessage) -> bool:
        """Counts the message; True when the bot would run the check on it."""
        self.messages += 1
        if record.is_bot or not may_be_asking(record.content):
            return False
        self.asking += 1
        return self.cooling_until is None or record.created_at >= self.cooling_until

    def account(self, index: int, record: ImportedMessage, view: PromptView) -> None:
        body = check_request(self.model, DEFAULT_BOT_NAME, view.tail_lines)
        self.meter.account(body, CHECK_OUTPUT_TOKENS)
        if _draw(index) < YES_SHARE:
            self.yes += 1
            self.cooling_until = record.created_at + COOLDOWN

    def figures(self, reply_usd_per_turn: float | None) -> dict[str, Any]:
        per_1k = 1000 / max(self.messages, 1)
        totals = self.meter.totals
        out: dict[str, Any] = {
            "join_in_model": self.model,
            "join_in_assumed_yes_share": YES_SHARE,
            "join_in_asking_share": round(self.asking / max(self.messages, 1), 4),
            "join_in_checks_per_1k_messages": round(totals.requests * per_1k, 1),
            "join_in_check_usd_per_1k_messages": round(totals.cost_usd * per_1k, 4),
            "join_in_replies_per_1k_messages": round(self.yes * per_1k, 1),
        }
        if reply_usd_per_turn is not None:
            out["join_in_reply_usd_per_1k_messages"] = round(self.yes * per_1k * reply_usd_per_turn, 4)
        return out
