"""Erasure reaches Eva's own words (memory/privacy/mention_erasure.py): after alice's /forget-me, Eva's
replies to alice's messages (every part of a long one) are erased with them, and in Eva's other
replies alice's name, written in plain text, is shown as @unknown-user; nothing Discord still
shows brings it back (the reconnect window and the background walk), and a reply of Eva's to
someone who opted out is never logged. The real bot on SimCord, the real Anthropic client
against the fake.

And the compactor: a call whose first request was out when an erasure committed sends no
"too long" follow-up with the erased words (memory/compaction/anthropic_summarizer.py asks before each
request whether the row moved)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from bot.gateway.running import INGEST_COG
from bot.gateway.walk import Reconciler
from memory.storage.log import ChatKey, NewMessage
from memory.storage.models import Message
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.anthropic_behaviours import Fault
from tests.hardening.support import assert_row_consistent, table_dump, until
from tests.worlds.hardening_world import World, catch_up

FLAT = "quokkaflat"  # alice's words: only her message and Eva's answer to it hold them
LONG_ANSWER = "Noted, alice: your flat is the " + FLAT + " on Birch Lane. " + "Keys under the mat. " * 110


async def row_of(world: World, snowflake: int) -> Message | None:
    async with world.engine.sessions() as s:
        return await s.scalar(select(Message).where(Message.snowflake == snowflake))


def names_alice(dumped: str, world: World) -> list[str]:
    found = [word for word in ("alice", FLAT) if word in dumped.lower()]
    return found + (["id"] if str(world.alice.id) in dumped else [])


async def test_forget_me_erases_eva_s_replies_to_the_person_and_her_name_in_eva_s_other_replies(
    world: World,
) -> None:
    w = world
    w.fake.script.push_text(LONG_ANSWER, match="reply")  # over 2,000 characters: two messages
    asked = await w.alice.send(w.general, f"{w.me.mention} remember my flat, the {FLAT} on Birch Lane")
    answer = [m for m in w.bot_messages() if m.reference and m.reference.message_id == asked.id]
    assert len(answer) == 2, "a long answer is two messages, both replying to the question"
    w.fake.script.push_text("alice told me where she lives; ask alice herself.", match="reply")
    question = await w.bob.send(w.general, f"{w.me.mention} what did {w.alice.mention} tell you?")
    (to_bob,) = [m for m in w.bot_messages() if m.reference and m.reference.message_id == question.id]
    w.fake.script.push_text(f"She said: remember my flat, the {FLAT} on Birch Lane.", match="reply")
    again = await w.bob.send(w.general, f"{w.me.mention} her words exactly?")
    (quoting,) = [m for m in w.bot_messages() if m.reference and m.reference.message_id == again.id]
    await w.bob.send(w.general, "keeperbob the picnic is on sunday")
    await w.settle()
    assert "alice" in (await row_of(w, to_bob.id)).text  # type: ignore[union-attr]

    result = await w.alice.slash(w.general, "forget-me")
    await w.alice.click(result.response, label="Erase my messages")
    assert result.response is not None
    said = result.response.content
    # Her question, Eva's two-part answer to it, and Eva's answer to bob that quotes her.
    assert said.startswith("Erased 1 message and 3 of my messages answering or quoting them;"), said
    assert "Your name is gone from 2 messages of others that named you" in said  # bob's and Eva's
    await w.settle()

    for part in [*answer, quoting]:
        row = await row_of(w, part.id)
        assert row is not None and row.erased_at is not None and row.text is None and row.author_id is None
    kept = await row_of(w, to_bob.id)
    assert kept is not None and kept.text is not None
    assert kept.text.startswith("@unknown-user told me where she lives; ask @unknown-user herself.")
    asking = await row_of(w, question.id)
    assert asking is not None and asking.text == f"@{w.me.display_name} what did @unknown-user tell you?"

    async def nothing_of_her() -> None:
        dumped = await table_dump(w.engine.sessions)
        assert names_alice(dumped, w) == [] and "keeperbob" in dumped
        await assert_row_consistent(w.engine.sessions, await w.chat_of(w.general))

    await nothing_of_her()
    # Discord still shows every word: a reconnect's window and the walk over the whole history
    # compare the log with it and bring nothing back.
    await w.ingest.resync()
    assert await w.ingest.flush(timeout=10)
    w.services.settings.reconcile_period = 0.0
    cog: Any = w.env.bot.get_cog(INGEST_COG)  # type: ignore[attr-defined]
    reconciler = cog.reconciler
    assert isinstance(reconciler, Reconciler)
    assert await reconciler.step() == 1  # one page: the whole of general's short history
    assert await w.ingest.flush(timeout=10)
    await catch_up(w.services)
    await nothing_of_her()
    again = await row_of(w, to_bob.id)
    assert again is not None and (again.text, again.edited_at) == (kept.text, kept.edited_at)


async def test_eva_s_reply_to_someone_who_opted_out_is_not_logged(world: World) -> None:
    w = world
    result = await w.alice.slash(w.general, "forget-me", stop_remembering=True)
    await w.alice.click(result.response, label="Erase my messages")
    w.fake.script.push_text("Sure, alice: the " + FLAT + " it is.", match="reply")
    asked = await w.alice.send(w.general, f"{w.me.mention} my flat is the {FLAT}")
    (answer,) = [m for m in w.bot_messages() if m.reference and m.reference.message_id == asked.id]
    w.fake.script.push_text("Hello bob.", match="reply")
    other = await w.bob.send(w.general, f"{w.me.mention} hello")
    (to_bob,) = [m for m in w.bot_messages() if m.reference and m.reference.message_id == other.id]
    await w.settle()
    assert await row_of(w, asked.id) is None and await row_of(w, answer.id) is None
    assert await row_of(w, to_bob.id) is not None, "Eva's answers to others are logged as ever"
    dumped: Any = await table_dump(w.engine.sessions)
    assert FLAT not in dumped


WORDS = "wombatcanary"  # alice's words in the compaction test


async def test_a_too_long_follow_up_is_never_sent_after_an_erasure_commits(
    services: Any, fake_anthropic: FakeAnthropic
) -> None:
    engine = services.engine
    chat = await engine.ensure_chat(ChatKey("text", "general", discord_id=555, guild_id=77))
    start = datetime(2026, 3, 1, tzinfo=UTC)
    await engine.append_many(chat, [
        NewMessage("alice" if k % 2 else "bob", start + timedelta(minutes=k),
                   f"{WORDS if k % 2 else 'keeperbob'} note {k} about the lake trip and the picnic on sunday",
                   author_id=1 if k % 2 else 2, snowflake=100 + k)
        for k in range(12)
    ])  # fmt: skip
    fake_anthropic.compactor.overshoot_rate = 1.0  # every first try is too long: each call asks again
    fake_anthropic.faults.fail_fraction(1.0, Fault("hang", hang_seconds=2.0), match="compact")
    running = asyncio.create_task(engine.compact(chat))
    await until(
        lambda: any(e.status is None and e.fault == "hang" for e in fake_anthropic.requests("compact"))
    )
    out = fake_anthropic.requests("compact")
    assert any(WORDS in json.dumps(e.body) for e in out), "a request out holds alice's words"

    await engine.erase_author(77, 1)  # committed while those first requests are out
    fake_anthropic.faults.clear()  # their answers come; anything sent from now on is answered at once
    committed_at = len(fake_anthropic.requests("compact"))
    report = await running

    after = fake_anthropic.requests("compact")[committed_at:]
    assert not [e.request_id for e in after if WORDS in json.dumps(e.body)], "erased words sent again"
    assert report.discarded > 0
    await engine.compact(chat, until_idle=True, force_swap=True)
    assert WORDS not in await table_dump(services.engine.sessions)
    assert not [e for e in fake_anthropic.requests("compact")[committed_at:] if WORDS in json.dumps(e.body)]
