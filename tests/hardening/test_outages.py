"""Outages: PostgreSQL stopped for 30 s while messages arrive and a turn runs; Claude
down for 10 minutes (of the compactor's clock); `eva worker` killed (SIGKILL) while compactor
calls are in flight; the embedded database's postmaster killed under `eva run`. While things
are down the bot answers with a short message instead of crashing; afterwards every message
is logged once, in order, the rows tile and show only built lines, and the compaction that was
in flight resumes and finishes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import simcord
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.app import build_services
from bot.client import EvaBot
from bot.database import Database
from bot.reply.limits import CLAUDE_DOWN_NOTE, SOMETHING_BROKE_NOTE
from memory.clock import SimulatedClock
from memory.config import MemoryConfig
from memory.engine import MemoryEngine
from memory.storage.database import make_sessions
from memory.storage.embedded import EmbeddedPostgres
from memory.storage.log import ChatKey, NewMessage
from memory.storage.models import Message, TreeNode
from tests.bot.conftest import declared_retry_wait, ingest_of
from tests.bot.gateway.test_backfill import restartable_database  # noqa: F401  (fixture)
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault
from tests.fakes.discord_api import FakeDiscord
from tests.hardening.support import CapturedLogs, assert_row_consistent, until, work_left
from tests.worlds.eva_process import embedded_database, endpoints, eventually, postmaster_pid, start_eva
from tests.worlds.hardening_world import catch_up, tiny_settings

Sessions = async_sessionmaker[AsyncSession]
REPLY_ONLY = ("bot.gateway.cog", "bot.reply.cog")


async def logged_in_order(sessions: Sessions, chat_id: int) -> list[int]:
    """The chat's snowflakes in log order, checked to be logged once each and in order."""
    async with sessions() as s:
        rows = (
            await s.scalars(select(Message.snowflake).where(Message.chat_id == chat_id).order_by(Message.idx))
        ).all()
    snowflakes = [int(r) for r in rows if r is not None]
    assert snowflakes == sorted(set(snowflakes)), "a message was logged twice or out of order"
    return snowflakes


async def test_postgres_down_30_seconds_while_messages_arrive_and_a_turn_runs(
    restartable_database: tuple[EmbeddedPostgres, AsyncEngine],  # noqa: F811
    fake_anthropic: FakeAnthropic,
    all_logs: CapturedLogs,
) -> None:
    server, engine = restartable_database
    fake_anthropic.reset()
    sessions = make_sessions(engine)
    services = build_services(
        tiny_settings(fake_anthropic), Database(engine=engine, sessions=sessions, embedded=None)
    )
    bot = EvaBot(services, extensions=REPLY_ONLY)
    async with simcord.run(bot) as env:
        ingest = ingest_of(bot)
        ingest.retry_wait = declared_retry_wait(env)
        guild = env.create_guild()
        general = guild.create_text_channel("general")
        alice, bob = guild.add_member(env.create_user("alice")), guild.add_member(env.create_user("bob"))
        for k in range(8):
            await (alice if k % 2 else bob).send(
                general, f"message {k} before the outage, about the lake trip on sunday"
            )
        assert await ingest.flush(timeout=10)
        await catch_up(services)

        server.stop()
        for k in range(10):
            await (alice if k % 2 else bob).send(
                general, f"message {k} while the database is down, still about the lake"
            )
        assert ingest.buffered == 10
        await alice.send(general, f"{bot.user.mention} are you there?")  # type: ignore[union-attr]
        mine = [m for m in general.history() if m.author.id == bot.user.id]  # type: ignore[union-attr]
        assert [m.content for m in mine] == [SOMETHING_BROKE_NOTE]  # a short note, no crash
        assert (await services.scheduler.step()).chats == 0  # type: ignore[union-attr]  # a tick survives
        await env.advance_time(30)  # 30 s of retries, once a second
        server.start()
        await env.advance_time(ingest.retry_seconds)
        assert await ingest.flush(timeout=10)
        assert ingest.buffered == 0

        info = await services.engine.chat_by_discord_id(general.id)
        assert info is not None
        assert await logged_in_order(sessions, info.id) == sorted(m.id for m in general.history())
        await catch_up(services)
        await assert_row_consistent(sessions, info.id)
        await alice.send(general, f"{bot.user.mention} and now?")  # type: ignore[union-attr]
        assert [m for m in general.history() if m.author.id == bot.user.id][-1].content.startswith(
            "Fake reply"
        )  # type: ignore[union-attr]
    await services.claude.close()
    assert (
        len(all_logs.named("ingest.database_unavailable")) == 1
        and len(all_logs.named("ingest.database_back")) == 1
    )
    assert all_logs.named("reply.failed") and all_logs.named("compactor.tick_failed")


async def test_claude_down_10_minutes_replies_apologise_and_compaction_resumes(
    engine: AsyncEngine, sessions: Sessions, fake_anthropic: FakeAnthropic, all_logs: CapturedLogs
) -> None:
    fake_anthropic.reset()
    clock = SimulatedClock(datetime(2026, 1, 2, tzinfo=UTC))  # SimCord's messages are dated 2026-01-01
    services = build_services(
        tiny_settings(fake_anthropic), Database(engine=engine, sessions=sessions, embedded=None), clock=clock
    )
    bot = EvaBot(services, extensions=REPLY_ONLY)
    async with simcord.run(bot) as env:
        guild = env.create_guild()
        general = guild.create_text_channel("general")
        alice, bob = guild.add_member(env.create_user("alice")), guild.add_member(env.create_user("bob"))
        fake_anthropic.faults.fail_fraction(
            1.0, Fault("overloaded", retry_after=0.01)
        )  # every call, replies too
        for k in range(12):
            await (alice if k % 2 else bob).send(
                general, f"message {k} while Claude is down, about the lake trip on sunday"
            )
        await alice.send(general, f"{bot.user.mention} what was the plan?")  # type: ignore[union-attr]
        replies = [m.content for m in general.history() if m.author.id == bot.user.id]  # type: ignore[union-attr]
        assert replies == [CLAUDE_DOWN_NOTE]
        scheduler = services.scheduler
        assert scheduler is not None
        for _ in range(60):  # ten minutes on the compactor's clock, a tick every RETRY (10 s)
            clock.advance(10)
            await scheduler.step()
        failed = [e for e in fake_anthropic.requests("compact") if e.status == 529]
        assert len(failed) >= 60, "the compactor kept retrying every 10 s"
        info = await services.engine.chat_by_discord_id(general.id)
        assert info is not None and await work_left(sessions) == [info.id]
        assert (await services.engine.prompt_view(info.id)).boundary == 0  # nothing swapped in

        fake_anthropic.faults.clear()  # Claude is back
        clock.advance(10)
        await catch_up(services)
        await assert_row_consistent(sessions, info.id)
        assert (await services.engine.prompt_view(info.id)).boundary > 0
        await alice.send(general, f"{bot.user.mention} and now?")  # type: ignore[union-attr]
        assert [m for m in general.history() if m.author.id == bot.user.id][-1].content.startswith(
            "Fake reply"
        )  # type: ignore[union-attr]
        assert await logged_in_order(sessions, info.id) == sorted(m.id for m in general.history())
    await services.claude.close()
    nodes = [e["node"] for e in all_logs.named("compactor.node_failed")]
    assert nodes and len(nodes) == len(set(nodes)), "each failing line is reported once, not every 10 s"
    assert all_logs.named("reply.claude_failed")


# --- processes killed ----------------------------------------------------------------------------

SMALL_MEMORY = {
    "NODE_BYTES": "64", "TAIL_START": "300", "TAIL_KEEP": "60", "TAIL_FORCE": "600",
    "VIEW_HIGH": "500", "VIEW_LOW": "250", "QUIET": "0",
}  # fmt: skip


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


def task_inputs(fake: FakeAnthropic, entries: Any = None) -> set[str]:
    """The <input> blocks of compaction requests (the messages and lines being summarized)."""
    found = set()
    for entry in fake.requests("compact") if entries is None else entries:
        for block in entry.body["messages"][0]["content"]:
            found.update(re.findall(r"\n<input>\n(.*?)\n</input>", block["text"], re.DOTALL))
    return found


async def test_a_worker_killed_mid_compaction_resumes_after_restart(
    fake: FakeAnthropic, database_url: str, sessions: Sessions, workdir: Path
) -> None:
    engine = MemoryEngine(sessions, MemoryConfig())
    chat = await engine.ensure_chat(ChatKey("text", "general", discord_id=42, guild_id=7))
    start = datetime(2026, 5, 1, tzinfo=UTC)
    await engine.append_many(chat, [
        NewMessage("alice" if k % 2 else "bob", start + timedelta(minutes=k),
                   f"message {k} about the boat trip, long enough that the model must summarize it", snowflake=k + 1)
        for k in range(30)
    ])  # fmt: skip
    environment = {
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": fake.base_url,
        "DATABASE_URL": database_url,
        **SMALL_MEMORY,
    }
    fake.faults.fail_next(10_000, Fault("hang", hang_seconds=60), match="compact")  # every call hangs
    first = await start_eva(workdir, environment, "worker")
    try:
        await first.wait_for("worker.started")
        await until(lambda: len(fake.requests("compact")) >= 2, within=20)
        in_flight = [e for e in fake.requests("compact") if e.status is None]
        assert in_flight, "compactor calls were in flight"
        first.proc.send_signal(signal.SIGKILL)
        await first.proc.wait()
    finally:
        first.kill()
    interrupted = task_inputs(fake, in_flight)
    async with sessions() as s:
        assert await s.scalar(select(func.count()).select_from(TreeNode).where(TreeNode.by_model)) == 0

    fake.faults.clear()  # the model answers again
    sent_before = len(fake.requests("compact"))
    second = await start_eva(workdir, environment, "worker")
    try:
        await second.wait_for("worker.started")

        async def caught_up() -> bool:
            return (await engine.prompt_view(chat)).boundary > 0 and not await work_left(sessions)

        await eventually(caught_up, within=30)
        assert await second.terminate() == 0
    finally:
        second.kill()
    resumed = task_inputs(fake, fake.requests("compact")[sent_before:])
    assert interrupted <= resumed, "the calls in flight at the kill were made again"
    await assert_row_consistent(sessions, chat)
    assert not any("Traceback" in line for line in second.raw)


async def test_a_killed_postmaster_leaves_eva_answering_and_the_next_run_loses_nothing(
    fake: FakeAnthropic, workdir: Path
) -> None:
    async with FakeDiscord() as discord_fake:
        ids = discord_fake.ids
        data_dir = workdir / "data"
        pgdata = (data_dir / "pg").resolve()
        environment = endpoints(discord_fake, fake, data_dir)  # no DATABASE_URL: embedded
        database, sessions = embedded_database(pgdata)
        first = await start_eva(workdir, environment)
        second: Any = None
        try:
            await first.wait_for("bot.ready")
            before = discord_fake.chat.post_user_message(ids.general, ids.alice, "logged before the crash")

            async def logged(snowflake: int) -> bool:
                async with sessions() as s:
                    return (
                        await s.scalar(select(Message.idx).where(Message.snowflake == snowflake)) is not None
                    )

            await eventually(lambda: logged(int(before["id"])))
            await database.dispose()
            pid = postmaster_pid(pgdata)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)  # the database dies under the running bot
            for k in range(3):
                discord_fake.chat.post_user_message(
                    ids.general, ids.bob, f"said while the database is dead {k}"
                )
            discord_fake.chat.post_user_message(ids.general, ids.alice, f"<@{ids.bot}> still there?")

            async def answered() -> Any:
                mine = [
                    m
                    for m in discord_fake.world.channel_messages(ids.general)
                    if int(m["author"]["id"]) == ids.bot
                ]
                return mine[-1] if mine else None

            note = await eventually(answered, within=20)
            assert note["content"] == SOMETHING_BROKE_NOTE
            assert first.proc.returncode is None, "the bot is still running"
            assert await first.terminate(within=30) == 0  # a clean stop, though its database is gone
            assert not any("Traceback" in line for line in first.raw)

            second = await start_eva(workdir, environment)  # crash recovery, then backfill
            await second.wait_for("bot.ready", within=40)
            expected = [int(m["id"]) for m in discord_fake.world.channel_messages(ids.general)]

            async def all_logged() -> bool:
                async with sessions() as s:
                    found = (await s.scalars(select(Message.snowflake).order_by(Message.idx))).all()
                return [int(f) for f in found if f is not None] == expected

            await eventually(all_logged, within=20)
            await database.dispose()
            assert await second.terminate() == 0
            assert not any("Traceback" in line for line in second.raw)
        finally:
            await database.dispose()
            for process in (first, second):
                if process is not None:
                    process.kill()
            with contextlib.suppress(ProcessLookupError, TypeError):
                os.kill(postmaster_pid(pgdata), signal.SIGTERM)  # type: ignore[arg-type]
            await asyncio.sleep(0)
