"""The per-person cooldown: it delays, it never drops (docs/design.md, the reply turn).

USER_COOLDOWN_SECONDS apart, per person per channel: a person's turns in one channel start at
least that far apart. A trigger inside the window waits until the window ends and is then
answered together with whatever that person added meanwhile, in one turn; a storm of 30
mentions therefore costs one turn per window, and nobody is told to slow down in public.
Another channel (a thread, a DM) has its own window.

Pure: the cog asks :meth:`CooldownGate.wait` and does the waiting.
"""

from __future__ import annotations

from datetime import datetime

# Windows remembered before expired ones are dropped (each is ~150 bytes).
_PRUNE_AT = 10_000


class CooldownGate:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._started: dict[tuple[int, int], datetime] = {}  # (user, channel) -> window start

    def wait(self, user_id: int, channel_id: int, now: datetime) -> float:
        """Seconds until this person's window in this channel ends (0: free now)."""
        started = self._started.get((user_id, channel_id))
        if self.seconds <= 0 or started is None:
            return 0.0
        return max(0.0, self.seconds - (now - started).total_seconds())

    def start(self, user_id: int, channel_id: int, now: datetime) -> None:
        """A turn for this person in this channel starts now: a new window."""
        if self.seconds <= 0:
            return
        self._started[(user_id, channel_id)] = now
        if len(self._started) > _PRUNE_AT:
            for key, at in list(self._started.items()):
                if (now - at).total_seconds() >= self.seconds:
                    del self._started[key]
