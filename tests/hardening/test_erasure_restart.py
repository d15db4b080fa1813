"""After /forget-me, a restart and a full reconcile pass, `pg_dump --data-only` holds nothing of
the person: the real `eva run` against the whole-process Discord fake (gateway and REST over TCP)
and the Anthropic fake (its compactor writes the summary lines from the messages).

Alice ("Zephyrine" in the guild, global name "Zephy Q", username "zephyq") writes messages of
her own, asks Eva something (Eva's answer names and quotes her), bob mentions her and asks Eva
about her (Eva's answer names her by each of her names). Alice runs /forget-me (no opt-out) and
presses the button. Eva is stopped; bob edits his mention of her on Discord meanwhile. The next
`eva run` compares the day before with Discord (the reconnect window) and walks each chat's whole
history (RECONCILE_PERIOD and RECONCILE_TICK small): Discord still shows every word, id and name
of hers in bob's and Eva's messages. The dump of the whole database holds none of them."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.fakes.discord_api import FakeDiscord
from tests.hardening.test_import_erasure import dump
from tests.worlds.eva_process import EvaProcess, ProcessWorld, eventually, logged_message

CANARY = "numbatcanary"
NICK, GLOBAL_NAME, USERNAME = "Zephyrine", "Zephy Q", "zephyq"
# Small sizes so a few dozen messages arm compaction and most lines need the model; the walk
# looks for due pages every second and covers the whole history every two.
SETTINGS = {"NODE_BYTES": "128", "TAIL_START": "3000", "TAIL_KEEP": "400", "TAIL_FORCE": "6000",
            "TAIL_CAP": "12000", "VIEW_HIGH": "2000", "VIEW_LOW": "1000", "QUIET": "0",
            "RECONCILE_TICK": "1", "RECONCILE_PERIOD": "2"}  # fmt: skip


def traces_of_her(dumped: str, alice_id: int) -> list[str]:
    needles = [CANARY, str(alice_id), NICK, GLOBAL_NAME, USERNAME, "Birch Lane"]
    return [n for n in needles if n.lower() in dumped.lower()]


async def bot_answer_to(discord_fake: FakeDiscord, message: dict[str, Any]) -> list[dict[str, Any]]:
    """Eva's messages replying to ``message`` (every part of a long answer)."""
    bot = str(discord_fake.ids.bot)
    return [
        m
        for m in discord_fake.world.channel_messages(int(message["channel_id"]))
        if m["author"]["id"] == bot and (m.get("message_reference") or {}).get("message_id") == message["id"]
    ]


async def forget_me(discord_fake: FakeDiscord, user_id: int, channel_id: int) -> str:
    """/forget-me, then the button: the text the prompt shows once the erasure is done."""
    invoked = discord_fake.interactions.create_command(user_id, channel_id, "forget-me")
    (callback,) = await eventually(lambda: _responses(discord_fake, invoked), within=5)
    prompt_id = int(callback["message_id"])
    rows = discord_fake.world.message(prompt_id)["components"]
    (button,) = [b for row in rows for b in row["components"] if b.get("label") == "Erase my messages"]
    discord_fake.interactions.click(user_id, prompt_id, button["custom_id"])

    async def done() -> str | None:
        content = str(discord_fake.world.message(prompt_id)["content"])
        return content if content.startswith("Erased") else None

    return await eventually(done, within=20)


async def _responses(discord_fake: FakeDiscord, invoked: dict[str, Any]) -> list[dict[str, Any]]:
    return discord_fake.interactions.responses(int(invoked["id"]))


async def reconciled_since(
    sessions: async_sessionmaker[AsyncSession], since: datetime, chat_ids: list[int]
) -> bool:
    """The reconnect window and a whole walk of each chat finished after ``since``."""
    async with sessions() as s:
        rows = (
            await s.execute(
                text("SELECT chat_id, recent_reconciled_at, history_reconciled_at FROM reconcile_cursors")
            )
        ).all()
    done = {
        chat for chat, recent, history in rows if recent and history and recent > since and history > since
    }
    return set(chat_ids) <= done


async def nodes_hold(sessions: async_sessionmaker[AsyncSession], word: str) -> bool:
    async with sessions() as s:
        return bool(
            await s.scalar(text("SELECT count(*) FROM nodes WHERE text ILIKE :w"), {"w": f"%{word}%"})
        )


async def quiet(eva: EvaProcess, sessions: async_sessionmaker[AsyncSession]) -> bool:
    """The compactor has caught up: no row waits for repair or a staged row."""
    async with sessions() as s:
        waiting = await s.scalar(
            text("SELECT count(*) FROM memory_rows WHERE needs_repair OR staged IS NOT NULL")
        )
    return waiting == 0


async def test_pg_dump_after_forget_me_a_restart_and_a_full_reconcile_holds_nothing_of_her(
    processes: ProcessWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    discord_fake, anthropic_fake, ids = processes.discord, processes.anthropic, processes.discord.ids
    alice = discord_fake.world.users[ids.alice]
    alice.username, alice.global_name = USERNAME, GLOBAL_NAME
    discord_fake.world.guilds[ids.guild].members[ids.alice].nick = NICK
    chat = discord_fake.chat
    sync = await processes.start("sync-commands")
    assert await asyncio.wait_for(sync.proc.wait(), 60) == 0
    eva = await processes.run(**SETTINGS)

    mine = [chat.post_user_message(ids.general, ids.alice, f"{CANARY} note {k}: my flat is on Birch Lane {k}")
            for k in range(3)]  # fmt: skip
    mine.append(chat.post_user_message(ids.random, ids.alice, f"{CANARY} in random too, about Birch Lane"))
    anthropic_fake.script.push_text(f"Noted, {NICK}: your {CANARY} flat, Birch Lane 12.", match="reply")
    asked = chat.post_user_message(
        ids.general, ids.alice, f"<@{ids.bot}> remember: {CANARY} flat, Birch Lane 12"
    )
    to_her = await eventually(lambda: bot_answer_to(discord_fake, asked), within=20)
    tent = chat.post_user_message(ids.general, ids.bob, f"hey <@{ids.alice}> bring the tent")
    anthropic_fake.script.push_text(
        f"{NICK} has a flat; ask {GLOBAL_NAME} or {USERNAME} yourself.", match="reply"
    )
    question = chat.post_user_message(ids.general, ids.bob, f"<@{ids.bot}> where does <@{ids.alice}> live?")
    to_bob = await eventually(lambda: bot_answer_to(discord_fake, question), within=20)
    for k in range(30):  # enough for the compactor to build lines over all of it
        chat.post_user_message(
            ids.general, ids.bob, f"keeperbob {k} about the lake trip, the picnic and the boat"
        )
    last = chat.post_user_message(ids.general, ids.bob, "keeperbob the last one")
    await eventually(lambda: logged_message(sessions, int(last["id"])), within=20)
    await eventually(lambda: nodes_hold(sessions, CANARY), within=60)
    before = dump(processes.database_url)
    assert traces_of_her(before, ids.alice) == [
        CANARY,
        str(ids.alice),
        NICK,
        GLOBAL_NAME,
        USERNAME,
        "Birch Lane",
    ]

    said = await forget_me(discord_fake, ids.alice, ids.general)
    assert said.startswith(
        f"Erased {len(mine) + 1} messages and 1 of my messages answering or quoting them"
    ), said
    assert await eva.terminate() == 0
    # Nobody listens: bob edits his mention of her on Discord, which still shows all of her.
    chat.edit_user_message(int(tent["id"]), f"hey <@{ids.alice}> bring the tent and the stove")

    restarted_at = datetime.now().astimezone()
    eva = await processes.run(**SETTINGS)
    async with sessions() as s:
        live = list((await s.scalars(text("SELECT id FROM chats WHERE discord_id IS NOT NULL"))).all())
    assert len(live) == 2  # general and random
    await eventually(lambda: reconciled_since(sessions, restarted_at, live), within=60)
    await eventually(lambda: quiet(eva, sessions), within=60)

    after = dump(processes.database_url)
    assert traces_of_her(after, ids.alice) == []
    assert "keeperbob the last one" in after
    edited = await logged_message(sessions, int(tent["id"]))
    assert edited is not None and edited.text == "hey @unknown-user bring the tent and the stove"
    (answer_to_bob,) = to_bob
    kept = await logged_message(sessions, int(answer_to_bob["id"]))
    assert kept is not None and kept.text is not None
    assert kept.text.startswith("@unknown-user has a flat; ask @unknown-user or @unknown-user yourself.")
    for part in to_her:
        gone = await logged_message(sessions, int(part["id"]))
        assert gone is not None and gone.erased_at is not None and gone.text is None
    assert await eva.terminate() == 0
    assert not any("Traceback" in line for line in eva.raw)
