"""Logs never contain message text, at LOG_LEVEL=DEBUG through the production logging
setup: a whole conversation in SimCord (messages, a reply turn with tool calls, compaction over
HTTP, an edit, a delete, slash commands, and failures whose exceptions quote a message), and
the real `eva run` process against the Discord and Anthropic fakes, whose data folder holds no
message text outside PostgreSQL's own files either."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import simcord

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault, ScriptedReply, tool_use_block
from tests.fakes.discord_api import FakeDiscord
from tests.hardening.support import CapturedLogs, leaked
from tests.worlds.eva_process import EmbeddedFolder, embedded_database, eventually, logged_message, start_eva
from tests.worlds.hardening_world import World

# Words that occur only in messages (and in what the model writes from them).
WORDS = ("quokka", "zeppelin", "marmalade", "tamarind", "gondola", "kumquat", "vermilion", "xylophone")


def said(k: int) -> str:
    return f"the {WORDS[k % 4]} and the {WORDS[4 + k % 3]} at the lake, number {k}, with the whole gang"


async def test_a_whole_conversation_logs_no_message_text(
    simcord_env: simcord.Env,
    world: World,
    all_logs: CapturedLogs,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = world
    sent = []
    for k in range(10):
        sent.append(await (w.alice if k % 2 else w.bob).send(w.general, said(k)))
    await w.alice.send(w.thread, f"{WORDS[7]} in the thread")
    await w.alice.user.send_dm(f"a secret {WORDS[7]} for you")  # a DM: answered too
    await w.settle()  # compaction through the real summarizer, over HTTP
    assert w.fake.requests("compact")

    # A turn with tool calls whose arguments and results are message words.
    w.fake.script.push(ScriptedReply([
        tool_use_block("recall", {"query": WORDS[0]}),
        tool_use_block("zoom", {"id": 0, "n": 1}),
    ]), match="reply")  # fmt: skip
    w.fake.script.push_text(f"You talked about the {WORDS[0]} and the {WORDS[4]}.", match="reply")
    await w.alice.send(w.general, f"{w.me.mention} what did we say about the {WORDS[0]}?")
    assert w.bot_messages(w.general)[-1].content.startswith("You talked about")

    await w.alice.edit(sent[1], f"edited: the {WORDS[3]} only")
    await w.bob.delete(sent[2])
    await w.alice.slash(w.general, "recall", query=WORDS[1])
    await w.alice.slash(w.general, "zoom", address="0+1")
    await w.admin.slash(w.general, "memory view")
    await w.admin.slash(w.general, "memory node", address="0+1")
    await w.settle()

    # Failures whose exceptions quote message text: each is logged by type, with ids.
    async def recall_broke(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError(f"recall failed near '{WORDS[2]}'")

    monkeypatch.setattr(w.engine, "recall", recall_broke)
    await w.bob.slash(w.general, "recall", query=WORDS[2])
    assert [type(getattr(e, "original", e)) for e in simcord_env.errors] == [RuntimeError]  # seen, answered
    monkeypatch.undo()

    async def view_broke(*args: Any, **kwargs: Any) -> Any:
        raise ValueError(f"cannot render '{WORDS[5]}'")

    monkeypatch.setattr(w.engine, "prompt_view", view_broke)
    await w.bob.send(w.general, f"{w.me.mention} tell me about the {WORDS[5]}")
    monkeypatch.undo()

    real_write = w.engine.append_from_discord  # the ingest's one write, a message or a batch

    async def write_broke(discord_id: int, items: Any, about: Any) -> Any:
        if any(WORDS[6] in message.content for message, _ in items):
            raise ValueError(f"bad row: {[message.content for message, _ in items]}")
        return await real_write(discord_id, items, about)

    monkeypatch.setattr(w.engine, "append_from_discord", write_broke)
    await w.bob.send(w.general, f"the {WORDS[6]} row that cannot be written")
    assert await w.ingest.flush(timeout=10)
    monkeypatch.undo()

    w.fake.faults.fail_next(3, Fault("overloaded", retry_after=0.01), match="reply")
    await w.alice.send(w.general, f"{w.me.mention} and the {WORDS[3]}?")

    events = {e.get("event") for e in all_logs.events()}
    expected = {"command.failed", "reply.failed", "ingest.write_failed", "reply.claude_failed", "reply.answered",
                "ingest.erased", "compactor.tick"}  # fmt: skip
    assert expected <= events, expected - events
    assert not leaked(all_logs.text(), WORDS)


# --- the whole process ------------------------------------------------------------------------

TOKEN = "tok-SECRET-discord-4711"
API_KEY = "key-SECRET-anthropic-0815"
SMALL_MEMORY = {
    "NODE_BYTES": "64", "TAIL_START": "300", "TAIL_KEEP": "60", "TAIL_FORCE": "600",
    "VIEW_HIGH": "500", "VIEW_LOW": "250", "QUIET": "0",
}  # fmt: skip


@pytest.fixture
async def locked_fakes() -> AsyncIterator[tuple[FakeDiscord, FakeAnthropic]]:
    """Fakes that accept only the one token and the one key (so the secrets are really used)."""
    async with FakeDiscord(token=TOKEN) as discord_fake, FakeAnthropic(api_keys={API_KEY}) as anthropic_fake:
        yield discord_fake, anthropic_fake


def secret_environment(
    discord_fake: FakeDiscord, anthropic_fake: FakeAnthropic, data_dir: Path
) -> dict[str, str]:
    return {
        "DISCORD_TOKEN": TOKEN,
        "DISCORD_API_BASE": discord_fake.api_base,
        "DISCORD_GATEWAY_URL": discord_fake.gateway_url,
        "ANTHROPIC_API_KEY": API_KEY,
        "ANTHROPIC_BASE_URL": anthropic_fake.base_url,
        "DATA_DIR": str(data_dir),
        "DEBOUNCE_SECONDS": "0.1",
        **SMALL_MEMORY,
    }


def outside_postgres(data_dir: Path) -> list[Path]:
    pgdata = data_dir / "pg"
    return [p for p in data_dir.rglob("*") if p.is_file() and pgdata not in p.parents]


async def test_whole_process_logs_and_data_folder_keep_no_message_text(
    locked_fakes: tuple[FakeDiscord, FakeAnthropic], workdir: Path, embedded_folder: EmbeddedFolder
) -> None:
    discord_fake, anthropic_fake = locked_fakes
    ids = discord_fake.ids
    environment = secret_environment(discord_fake, anthropic_fake, embedded_folder.data_dir)
    eva = await start_eva(workdir, {**environment, "LOG_LEVEL": "DEBUG"})
    database, sessions = embedded_database(embedded_folder.pgdata)
    try:
        await eva.wait_for("bot.ready")
        posted = [
            discord_fake.chat.post_user_message(ids.general, ids.alice if k % 2 else ids.bob, said(k))
            for k in range(10)
        ]
        await eventually(lambda: logged_message(sessions, int(posted[-1]["id"])))
        anthropic_fake.script.push_text(f"The {WORDS[0]}, on the {WORDS[4]}.", match="reply")
        asked = discord_fake.chat.post_user_message(
            ids.general, ids.alice, f"<@{ids.bot}> what about the {WORDS[0]}?"
        )

        async def answered() -> Any:
            mine = [
                m
                for m in discord_fake.world.channel_messages(ids.general)
                if int(m["author"]["id"]) == ids.bot
            ]
            return mine[-1] if mine else None

        reply = await eventually(answered, within=15)
        assert reply["content"].startswith("The ") and reply["message_reference"]["message_id"] == asked["id"]
        discord_fake.chat.edit_user_message(int(posted[1]["id"]), f"edited: the {WORDS[3]} only")
        discord_fake.chat.delete_message(int(posted[2]["id"]))
        await eva.wait_for("ingest.erased", within=10)
        await eva.wait_for("compactor.tick", within=15)  # lines built from the messages
        await eva.wait_for("memory.purged", within=15)
        await database.dispose()
        assert await eva.terminate() == 0
    finally:
        await database.dispose()
        eva.kill()
    logs = "\n".join(eva.raw)
    assert anthropic_fake.requests("compact") and anthropic_fake.requests("reply")
    assert any('"level": "debug"' in line for line in eva.raw), "LOG_LEVEL=DEBUG was in force"
    assert not leaked(logs, WORDS)
    assert not leaked(logs, [TOKEN, API_KEY, "SECRET"])
    assert not any("Traceback" in line for line in eva.raw)
    # The bot writes no file of its own: only PostgreSQL's folder, whose server log holds no text.
    assert outside_postgres(embedded_folder.data_dir) == []
    server_log = embedded_folder.pgdata / "log"  # pg_ctl -l
    assert server_log.is_file() and "database system is ready" in server_log.read_text(errors="replace")
    assert not leaked(server_log.read_text(errors="replace"), [*WORDS, TOKEN, API_KEY])
