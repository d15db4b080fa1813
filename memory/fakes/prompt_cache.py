"""A simulation of the Messages API prompt cache: pure, with an injectable clock.

The rules, as documented (docs/design.md, provider facts; the prompt-caching docs):

- The request is one sequence of blocks in the API's prefix order: each tool definition, then
  each system block (a system string is one block), then each message's content blocks in order
  (a string content is one block).
- A ``cache_control`` mark on a block names the prefix up to and including that block. At most
  4 marks (enforced by the request validator, not here). A top-level ``cache_control`` marks the
  last block.
- Lookup at a mark: the prefix ending at the mark, then each shorter prefix back to
  ``LOOKBACK_BLOCKS`` (20) blocks before it; the first entry found is that mark's hit (the
  longest). Over all marks, the furthest hit is the read point: everything up to it is a read.
  Every hit refreshes its entry's lifetime, free of charge.
- Writes: every mark past the read point whose prefix reaches the model's minimum cacheable
  size stores an entry for its prefix. A prefix below the minimum is simply not cached (no error).
- Lifetimes: ``ttl`` "5m" = 300 s (the default), "1h" = 3600 s. An entry not read within its
  lifetime is gone.
- Token estimate (the fake has no tokenizer): ceil(UTF-8 bytes / 4), at least 1 per block
  (``BYTES_PER_TOKEN``). A text block counts its text; an image ``IMAGE_TOKENS``; any other
  block its compact JSON without ``cache_control``.
- Usage: ``cache_read_input_tokens`` = tokens up to the read point; ``cache_creation_input_tokens``
  = tokens from the read point to the last written mark, split by the TTL of the mark that
  closes each stretch; ``input_tokens`` = the rest (after the last read or write).
  Total input = input + creation + read.
- Entries are per model: a prefix cached for one model is not read by another.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BYTES_PER_TOKEN = 4
LOOKBACK_BLOCKS = 20
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

# Minimum cacheable prompt length in tokens, matched by model-name prefix, first match wins.
# Published values (docs/design.md, provider facts): Sonnet 4.5/4.6 1,024; Haiku 4.5 4,096;
# Opus 4.5-4.7 4,096; Opus 4.8 1,024. Haiku 5.5 and Sonnet 5.5 have no published value: we use
# their predecessors' numbers (4,096 and 1,024), the conservative choice for Haiku (the fake
# never promises a cache hit the real Haiku 4.5 would refuse).
MIN_CACHEABLE_TOKENS: tuple[tuple[str, int], ...] = (
    ("claude-haiku-5-5", 4096),
    ("claude-sonnet-5-5", 1024),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4", 1024),
    ("claude-opus-4-8", 1024),
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-7", 4096),
)
DEFAULT_MIN_CACHEABLE_TOKENS = 1024
IMAGE_TOKENS = 1600

Clock = Callable[[], float]


class ManualClock:
    """A clock that only moves when told to (tests)."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class OffsetClock:
    """Real monotonic time plus a settable offset (a running fake that tests can still jump)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


def estimate_tokens(data: str | bytes) -> int:
    size = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
    return max(1, math.ceil(size / BYTES_PER_TOKEN))


def min_cacheable_tokens(model: str, overrides: Mapping[str, int] | None = None) -> int:
    table = tuple((overrides or {}).items()) + MIN_CACHEABLE_TOKENS
    for prefix, tokens in table:
        if model.startswith(prefix):
            return tokens
    return DEFAULT_MIN_CACHEABLE_TOKENS


@dataclass(frozen=True, slots=True)
class Block:
    """One block of the prefix: a digest of its content, its token estimate, its mark's TTL."""

    digest: bytes
    tokens: int
    ttl: str | None = None


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _mark_ttl(raw: Mapping[str, Any]) -> str | None:
    mark = raw.get("cache_control")
    if not isinstance(mark, Mapping):
        return None
    return str(mark.get("ttl", "5m"))


def make_block(section: str, raw: Any, ttl: str | None = None) -> Block:
    """A block from a tool, system block, or message block (``section`` keeps roles apart)."""
    if isinstance(raw, str):
        content = {"type": "text", "text": raw}
    else:
        content = {key: value for key, value in raw.items() if key != "cache_control"}
        ttl = ttl or _mark_ttl(raw)
    text = content.get("text") if content.get("type") == "text" else None
    body = text.encode("utf-8") if isinstance(text, str) else _canonical(content)
    digest = hashlib.sha256(section.encode("utf-8") + b"\0" + _canonical(content)).digest()
    # An image costs about width x height / 750 tokens after the API scales it to ~1.15 MP at
    # most, so ~1,600 at most (vision docs); without decoding it the fake charges that ceiling
    # rather than its base64 text, which would count a 4 MB photo as a million tokens.
    tokens = IMAGE_TOKENS if content.get("type") == "image" else estimate_tokens(body)
    return Block(digest=digest, tokens=tokens, ttl=ttl)


def _request_parts(body: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for tool in body.get("tools") or ():
        yield "tool", tool
    system = body.get("system")
    if isinstance(system, str) and system:
        yield "system", system
    elif isinstance(system, list):
        for block in system:
            yield "system", block
    for message in body.get("messages") or ():
        content = message.get("content")
        if isinstance(content, str):
            yield message["role"], content
        else:
            for block in content or ():
                yield message["role"], block


def blocks_of_request(body: Mapping[str, Any]) -> list[Block]:
    """The request's blocks in prefix order (tools, system, messages), marks included."""
    blocks = [make_block(section, raw) for section, raw in _request_parts(body)]
    top = body.get("cache_control")
    if isinstance(top, Mapping) and blocks:
        last = blocks[-1]
        blocks[-1] = Block(last.digest, last.tokens, last.ttl or str(top.get("ttl", "5m")))
    return blocks


def count_request_tokens(body: Mapping[str, Any]) -> int:
    return sum(block.tokens for block in blocks_of_request(body))


@dataclass(frozen=True, slots=True)
class CacheUsage:
    input_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def as_usage(self, output_tokens: int) -> dict[str, Any]:
        """The response's ``usage`` object."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": self.ephemeral_1h_input_tokens,
            },
            "service_tier": "standard",
        }


@dataclass(slots=True)
class _Entry:
    expires_at: float
    lifetime: float


class PromptCache:
    """Cache entries keyed by (model, prefix hash); see the module docstring for the rules."""

    def __init__(
        self,
        clock: Clock = time.monotonic,
        min_tokens: Mapping[str, int] | None = None,
        lookback: int = LOOKBACK_BLOCKS,
    ) -> None:
        self.clock = clock
        self.min_tokens_overrides = dict(min_tokens or {})
        self.lookback = lookback
        self._entries: dict[bytes, _Entry] = {}

    def __len__(self) -> int:
        self._evict(self.clock())
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def _evict(self, now: float) -> None:
        for key in [key for key, entry in self._entries.items() if entry.expires_at <= now]:
            del self._entries[key]

    def process(self, model: str, blocks: Sequence[Block]) -> CacheUsage:
        """Look up, refresh and write entries for one request; return its input usage."""
        now = self.clock()
        self._evict(now)
        keys: list[bytes] = []
        chain = hashlib.sha256(model.encode("utf-8")).digest()
        cumulative: list[int] = []
        running = 0
        for block in blocks:
            chain = hashlib.sha256(chain + block.digest).digest()
            keys.append(chain)
            running += block.tokens
            cumulative.append(running)
        marks = [index for index, block in enumerate(blocks) if block.ttl is not None]

        read_end = -1
        for mark in marks:
            for index in range(mark, max(-1, mark - self.lookback - 1), -1):
                entry = self._entries.get(keys[index])
                if entry is not None:
                    entry.expires_at = now + entry.lifetime  # a hit refreshes, at no charge
                    read_end = max(read_end, index)
                    break

        read_tokens = cumulative[read_end] if read_end >= 0 else 0
        minimum = min_cacheable_tokens(model, self.min_tokens_overrides)
        written = {"5m": 0, "1h": 0}
        boundary = read_tokens
        for mark in marks:
            if mark <= read_end or cumulative[mark] < minimum:
                continue
            ttl = blocks[mark].ttl or "5m"
            lifetime = TTL_SECONDS.get(ttl, TTL_SECONDS["5m"])
            self._entries[keys[mark]] = _Entry(expires_at=now + lifetime, lifetime=lifetime)
            written[ttl if ttl in written else "5m"] += cumulative[mark] - boundary
            boundary = cumulative[mark]
        creation = written["5m"] + written["1h"]
        total = running
        return CacheUsage(
            input_tokens=total - read_tokens - creation,
            cache_creation_input_tokens=creation,
            cache_read_input_tokens=read_tokens,
            ephemeral_5m_input_tokens=written["5m"],
            ephemeral_1h_input_tokens=written["1h"],
        )
