"""The whole process (and the kill -9 check): the real
`eva run` as a subprocess against the local Discord fake (gateway + REST over TCP), the
Anthropic fake and real PostgreSQL. Nothing is patched inside the bot: it is pointed at the
fakes by its settings (DISCORD_API_BASE, DISCORD_GATEWAY_URL, ANTHROPIC_BASE_URL)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.config import MemoryConfig
from memory.engine import MemoryEngine
from memory.storage.log import ChatKey, NewMessage
from memory.storage.models import Message
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.worlds.bot_world import TINY_MEMORY
from tests.worlds.eva_process import (
    EmbeddedFolder,
    EvaProcess,
    ProcessWorld,
    embedded_database,
    endpoints,
    eventually,
    logged_message,
    postmaster_pid,
    start_eva,
)


async def test_eva_run_logs_answers_and_erases(
    processes: ProcessWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    discord_fake, anthropic_fake, ids = processes.discord, processes.anthropic, processes.discord.ids
    eva = await processes.run()
    ready = await eva.wait_for("bot.ready")  # the event run() waited for
    assert ready["user_id"] == ids.bot and ready["guilds"] == 1

    hello = discord_fake.chat.post_user_message(ids.general, ids.alice, "hello from alice")
    row = await eventually(lambda: logged_message(sessions, int(hello["id"])))
    assert row.text == "hello from alice" and row.author_name == "alice"

    asked = discord_fake.chat.post_user_message(ids.general, ids.alice, f"<@{ids.bot}> how are you?")

    async def bot_reply() -> dict[str, Any] | None:
        messages = discord_fake.world.channel_messages(ids.general)
        mine = [m for m in messages if int(m["author"]["id"]) == ids.bot]
        return mine[-1] if mine else None

    reply = await eventually(bot_reply, within=15)
    assert reply["content"].startswith("Fake reply")
    assert reply["message_reference"]["message_id"] == asked["id"]
    assert anthropic_fake.requests("reply"), "the answer came from the model"
    logged_reply = await eventually(lambda: logged_message(sessions, int(reply["id"])))
    # Through ingest like any message: "(reply to #1)" points at the question, message #1.
    assert logged_reply.is_bot and logged_reply.text == reply["content"] + " (reply to #1)"

    discord_fake.chat.delete_message(int(hello["id"]))

    async def erased() -> Message | None:
        found = await logged_message(sessions, int(hello["id"]))
        return found if found is not None and found.erased_at is not None else None

    gone = await eventually(erased)
    assert gone.text is None and gone.author_name is None and gone.author_id is None
    assert await eva.terminate() == 0
    assert any(e.get("event") == "bot.stopped" for e in eva.events)
    assert not any("Traceback" in line for line in eva.raw)


async def test_eva_run_starts_cleanly_after_kill_9(
    fakes: tuple[FakeDiscord, FakeAnthropic], workdir: Path, embedded_folder: EmbeddedFolder
) -> None:
    discord_fake, anthropic_fake = fakes
    ids = discord_fake.ids
    data_dir, pgdata = embedded_folder.data_dir, embedded_folder.pgdata
    environment = endpoints(discord_fake, anthropic_fake, data_dir)  # no DATABASE_URL: embedded
    first = await start_eva(workdir, environment)
    second: EvaProcess | None = None
    engine, sessions = embedded_database(pgdata)
    try:
        await first.wait_for("bot.ready")
        before = discord_fake.chat.post_user_message(ids.general, ids.alice, "logged before the crash")
        await eventually(lambda: logged_message(sessions, int(before["id"])))
        await engine.dispose()  # our connections must not outlive the server
        first.proc.kill()  # SIGKILL: no finally block runs, the database server is orphaned
        await first.proc.wait()
        assert postmaster_pid(pgdata) is not None, "the orphaned server should still be running"
        missed = discord_fake.chat.post_user_message(ids.general, ids.bob, "said while eva was dead")

        second = await start_eva(workdir, environment)
        await second.wait_for("bot.ready")
        row = await eventually(lambda: logged_message(sessions, int(missed["id"])))
        assert row.text == "said while eva was dead"  # backfilled: the channel was logged before
        await engine.dispose()
        assert await second.terminate() == 0
        assert not any("Traceback" in line for line in first.raw + second.raw)

        async def server_stopped() -> bool:
            return postmaster_pid(pgdata) is None

        await eventually(server_stopped)
    finally:
        await engine.dispose()
        for process in (first, second):
            if process is not None:
                process.kill()


async def test_eva_worker_compacts_what_another_process_logged(
    fakes: tuple[FakeDiscord, FakeAnthropic],
    database_url: str,
    sessions: async_sessionmaker[AsyncSession],
    workdir: Path,
) -> None:
    _, anthropic_fake = fakes
    small = {name.upper(): str(value) for name, value in TINY_MEMORY.items()}  # 30 messages: summary lines
    engine = MemoryEngine(sessions, MemoryConfig())
    chat_id = await engine.ensure_chat(ChatKey("text", "general", discord_id=42, guild_id=7))
    start = datetime(2026, 5, 1, tzinfo=UTC)
    messages = [
        NewMessage("alice", start + timedelta(minutes=k), f"message {k} about the boat trip", snowflake=k + 1)
        for k in range(30)
    ]
    await engine.append_many(chat_id, messages)
    environment = {
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": anthropic_fake.base_url,
        "DATABASE_URL": database_url,
        **small,
    }
    worker = await start_eva(workdir, environment, "worker")
    try:
        await worker.wait_for("worker.started")

        async def swapped() -> bool:
            return (await engine.prompt_view(chat_id)).boundary > 0

        await eventually(swapped, within=15)
        assert anthropic_fake.requests("compact"), "lines were written by the model"
        assert await worker.terminate() == 0
        assert any(e.get("event") == "worker.stopped" for e in worker.events)
    finally:
        worker.kill()


async def test_eva_run_reconciles_a_delete_and_an_edit_made_while_the_gateway_was_down(
    processes: ProcessWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    """Issue acceptance: a message deleted and one edited while the bot is offline (their
    events lost) are erased / updated within a minute of the bot reconnecting."""
    discord_fake, ids = processes.discord, processes.discord.ids
    eva = await processes.run()
    doomed = discord_fake.chat.post_user_message(ids.general, ids.bob, "bob takes this back later")
    fixed = discord_fake.chat.post_user_message(ids.general, ids.alice, "alice made a typo hree")
    await eventually(lambda: logged_message(sessions, int(fixed["id"])))

    await discord_fake.gateway.go_down()  # no session survives: what happens now is never sent
    discord_fake.chat.delete_message(int(doomed["id"]))
    discord_fake.chat.edit_user_message(int(fixed["id"]), "alice fixed her typo here")
    assert discord_fake.gateway.sessions == {}
    await asyncio.sleep(2.0)  # offline for a while: eva tries to reconnect and is refused
    discord_fake.gateway.come_back()
    back_at = asyncio.get_running_loop().time()

    async def reconciled() -> bool:
        gone = await logged_message(sessions, int(doomed["id"]))
        now = await logged_message(sessions, int(fixed["id"]))
        return (
            gone is not None
            and gone.erased_at is not None
            and gone.text is None
            and now is not None
            and now.text == "alice fixed her typo here"
        )

    await eventually(reconciled, within=60)
    took = asyncio.get_running_loop().time() - back_at
    readies = [e for e in eva.events if e.get("event") == "bot.ready"]
    assert len(readies) == 2, "reconnected with a new session (READY), not a RESUME"
    # Done by the window compared at READY (its log line may trail the commit a little).
    await eva.wait_for("reconcile.window_done")
    print(f"reconciled {took:.1f} s after the gateway came back")
    assert await eva.terminate() == 0
    assert not any("Traceback" in line for line in eva.raw)
