"""Shards split between processes (bot/shards.py): the settings, which guilds and DMs a process
owns, how IDENTIFYs are spaced, and what `eva health` says about a process's shards."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bot.commands.status import memory_status
from bot.health import Heartbeat, healthy_line, verdict, write
from bot.services import Services
from bot.settings import Settings
from bot.shards import IdentifyBuckets, describe, holds_dms, owns_guild, parse_shard_ids, shard_of
from memory import ChatKey
from tests.cli.support import eva


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_shard_ids_read_as_ranges_and_lists() -> None:
    assert parse_shard_ids("0-3") == (0, 1, 2, 3)
    assert parse_shard_ids("4, 0-1") == (0, 1, 4)
    for bad in ("", "a-b", "3-1", "1-", "-2"):
        with pytest.raises(ValueError):
            parse_shard_ids(bad)


def test_shard_settings_are_checked_in_one_sentence_each() -> None:
    assert settings(shard_count=4, shard_ids="2-3").shard_problems() == []
    assert settings(shard_count=4, shard_ids="2-3").shard_plan() == (4, (2, 3))
    assert settings().shard_plan() == (None, None)
    assert settings(shard_ids="0-1").shard_problems() == [
        "SHARD_IDS needs SHARD_COUNT (the shards of how many?)"
    ]
    assert settings(shard_count=0).shard_problems() == ["SHARD_COUNT must be at least 1"]
    assert settings(shard_count=4, shard_ids="2-4").shard_problems() == [
        "SHARD_IDS goes up to 4, but SHARD_COUNT=4 has shards 0 to 3"
    ]
    assert settings(shard_count=4, shard_ids="x").problems() == [
        "SHARD_IDS: 'x' is not a shard id or a range such as 0-3"
    ]


async def test_eva_run_refuses_shards_it_cannot_hold_in_one_line(tmp_path: Path) -> None:
    done = await eva(tmp_path, "run", SHARD_COUNT="4", SHARD_IDS="3-5")
    assert (done.code, done.lines) == (
        2,
        ["eva run: SHARD_IDS goes up to 5, but SHARD_COUNT=4 has shards 0 to 3"],
    )


def sharded(count: int, ids: list[int] | None) -> SimpleNamespace:
    """What bot/shards.py reads of an AutoShardedBot."""
    return SimpleNamespace(shard_count=count, shard_ids=ids, shards={})


def test_a_process_owns_the_guilds_of_its_shards_and_dms_with_shard_zero() -> None:
    guilds = [(k << 22) | 12345 for k in range(8)]  # guild k on shard k % 4
    assert [shard_of(g, 4) for g in guilds] == [0, 1, 2, 3, 0, 1, 2, 3]
    low, high = sharded(4, [0, 1]), sharded(4, [2, 3])
    assert [g for g in guilds if owns_guild(low, g)] == [guilds[k] for k in (0, 1, 4, 5)]
    assert [g for g in guilds if owns_guild(high, g)] == [guilds[k] for k in (2, 3, 6, 7)]
    assert holds_dms(low) and not holds_dms(high)
    plain = SimpleNamespace(shard_count=None, shard_id=None)  # one connection: everything
    assert all(owns_guild(plain, g) for g in guilds) and holds_dms(plain)
    assert all(owns_guild(sharded(4, None), g) for g in guilds)  # every shard of 4


def test_shards_are_described_for_people() -> None:
    assert describe(4, [0, 1]) == "shards 0-1 of 4"
    assert describe(8, [0, 2]) == "shards 0, 2 of 8"
    assert describe(4, [3]) == "shard 3 of 4"
    assert describe(4, None) == describe(4, [0, 1, 2, 3]) == "every shard of 4"
    assert describe(None, None) == "one connection (no shards)"


async def test_identifies_are_spaced_within_a_bucket_and_not_across_buckets() -> None:
    buckets = IdentifyBuckets(spacing=0.3)
    buckets.max_concurrency = 2  # shards 0 and 2 share bucket 0; 1 and 3 bucket 1
    started = time.monotonic()
    waits = await asyncio.gather(*(buckets.wait(shard) for shard in (0, 1, 2, 3)))
    assert waits[0] == waits[1] == 0.0
    assert waits[2] == pytest.approx(0.3, abs=0.05) and waits[3] == pytest.approx(0.3, abs=0.05)
    assert time.monotonic() - started < 0.5  # two buckets at once: one spacing, not three
    one = IdentifyBuckets(spacing=0.1)
    one.max_concurrency = 1
    assert await asyncio.gather(*(one.wait(s) for s in range(3))) == pytest.approx([0.0, 0.1, 0.2], abs=0.03)


async def test_eva_health_names_the_shards_of_a_sharded_process(tmp_path: Path) -> None:
    path = tmp_path / "health.json"
    now = time.time()
    down = Heartbeat(now, False, now, 15.0, shards="shards 0-1 of 4", shards_down=[1])
    assert verdict(down, now) == "not connected to the Discord gateway (shards 0-1 of 4; down: 1)"
    up = Heartbeat(now, True, now, 15.0, shards="shards 0-1 of 4")
    assert verdict(up, now) is None and healthy_line(up) == "connected: shards 0-1 of 4"
    assert healthy_line(Heartbeat(now, True, now, 15.0)) is None  # one connection: silent, as before
    write(path, up)
    healthy = await eva(tmp_path, "health", HEALTH_FILE=str(path))
    assert (healthy.code, healthy.lines) == (0, ["connected: shards 0-1 of 4"])
    write(path, down)
    unhealthy = await eva(tmp_path, "health", HEALTH_FILE=str(path))
    assert (unhealthy.code, unhealthy.lines) == (
        1,
        ["not connected to the Discord gateway (shards 0-1 of 4; down: 1)"],
    )


async def test_memory_status_names_the_shards_of_the_process_answering(services: Services) -> None:
    chat = await services.engine.ensure_chat(
        ChatKey(kind="text", name="general", discord_id=555, guild_id=77)
    )
    sharded_status = await memory_status(services, chat, "#general", "shards 0-1 of 4")
    assert sharded_status.endswith("\nServed by the process holding shards 0-1 of 4.")
    assert "Served by" not in await memory_status(services, chat, "#general")  # one connection: as before
