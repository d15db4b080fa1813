"""One ordering rule for erasure against everything that writes (bot/gateway/erasure_order.py): a
message created on Discord before /forget-me (of its author) or /memory wipe (of its chat) is
never logged after the erasure commits, whether it waited in the queue from a (re)connection's
READY, was being fetched by the backfill, or is fetched by the backfill after a restart; the
messages of everyone else are all logged.

Through the real discord.py on SimCord: the slash commands and their buttons, the ingest
gate of a READY (on_disconnect, then on_ready), and env.restart_bot for a restart. SimCord's
clock stands still unless a test moves it, so "after the erasure" is made explicit by
advance_time past the erasure's margin.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import simcord
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.cli.sync_commands import COMMAND_EXTENSIONS
from bot.commands.forget import forget_person
from bot.commands.ui import FAILED
from bot.gateway.erasure_order import MARGIN_MS
from bot.gateway.ingest import Ingest
from bot.gateway.running import ingest_of
from memory.storage.models import Chat, Message
from tests.bot.gateway.test_backfill import DiscordHistory, history
from tests.hardening.support import leaked, table_dump
from tests.worlds.bot_world import Friends, friends, make_bot

__all__ = ["history"]  # the fixture

EXTENSIONS = ("bot.gateway.cog", *COMMAND_EXTENSIONS)
AFTER_THE_MARGIN = 2 * MARGIN_MS / 1000  # seconds of SimCord's clock: surely after an erasure
Sessions = async_sessionmaker[AsyncSession]
ASKED = "This erases every message you wrote"  # the confirmation's question, before the press


@pytest.fixture
def eva_extensions() -> tuple[str, ...]:
    return EXTENSIONS


@pytest.fixture
async def world(simcord_env: simcord.Env) -> Friends:
    base = friends(simcord_env, with_admin=True)
    await simcord_env.bot.tree.sync()  # type: ignore[attr-defined]
    return base


def declared(env: simcord.Env) -> Callable[[Awaitable[None]], Awaitable[None]]:
    """An erasure's wait for ingest as a SimCord external wait: the bot settles while it waits."""

    async def wait(waiting: Awaitable[None]) -> None:
        await env.external_wait(waiting, reason="the erasure waits for ingest to catch up")

    return wait


def cog_of(env: simcord.Env) -> Any:
    cog = env.bot.get_cog("IngestCog")  # type: ignore[attr-defined]
    assert cog is not None
    return cog


def ingest_now(env: simcord.Env) -> Ingest:
    ingest = ingest_of(env.bot)  # type: ignore[arg-type]
    assert isinstance(ingest, Ingest)
    return ingest


async def logged(sessions: Sessions, channel_id: int) -> list[Message]:
    async with sessions() as s:
        chat_id = await s.scalar(select(Chat.id).where(Chat.discord_id == channel_id))
        rows = await s.scalars(select(Message).where(Message.chat_id == chat_id).order_by(Message.idx))
        found = list(rows.all())
    snowflakes = [r.snowflake for r in found]
    assert snowflakes == sorted(set(snowflakes)), "logged twice or out of order"
    return found


def texts(rows: list[Message], author_id: int | None = None) -> list[str]:
    return [r.text or "" for r in rows if author_id is None or r.author_id == author_id]


async def settled(env: simcord.Env) -> None:
    await env.settle()
    assert await ingest_now(env).flush(timeout=10)


async def press_forget_me(world: Friends, person: simcord.MemberActor) -> simcord.InteractionResult:
    result = await person.slash(world.general, "forget-me")
    await person.click(result.response, label="Erase my messages")  # type: ignore[arg-type]
    return result


async def answer_of(env: simcord.Env, result: simcord.InteractionResult) -> str:
    """The confirmation's final text: an erasure that waited for ingest answers later than the
    press (SimCord settles while it waits), so this waits for the edit, ten seconds at most."""
    assert result.response is not None
    async with asyncio.timeout(10):
        while result.response.content.startswith(ASKED):
            await env.settle()
            await asyncio.sleep(0.01)
    return result.response.content


async def assert_nothing_of_alice(world: Friends, sessions: Sessions, words: list[str]) -> None:
    dump = await table_dump(sessions)
    assert leaked(dump, words) == [], "a message written before her erasure was logged after it"
    assert str(world.alice.id) not in dump, "a row holds her id"


async def assert_nothing_of_alice_but(world: Friends, sessions: Sessions, words: list[str]) -> None:
    """Her words from before the erasure are nowhere (her id may be, on her later message)."""
    assert leaked(await table_dump(sessions), words) == []


async def test_forget_me_while_the_queue_is_held_at_ready(world: Friends, sessions: Sessions) -> None:
    env, general, alice, bob = world.env, world.general, world.alice, world.bob
    await alice.send(general, "alice before the outage")
    await bob.send(general, "bob before the outage")
    await settled(env)
    cog, ingest = cog_of(env), ingest_now(env)
    ingest.wait_outside = declared(env)

    await cog.on_disconnect()  # from here to the end of the next READY's backfill: nothing written
    env.backend.create_message(general.id, alice.id, "alice while away: the locker code", broadcast=False)
    env.backend.create_message(general.id, bob.id, "bob while away", broadcast=False)
    await alice.send(general, "alice held in the queue: the spare key")
    await bob.send(general, "bob held in the queue")
    result = await press_forget_me(world, alice)  # the erasure waits for ingest to catch up
    await bob.send(general, "bob while the erasure waits")
    await cog.on_ready()  # the backfill is queued first, then the held messages
    assert (await answer_of(env, result)).startswith("Erased 1 message")
    await settled(env)
    rows = await logged(world.services.engine.sessions, general.id)
    assert texts(rows, bob.id) == [
        "bob before the outage",
        "bob while away",
        "bob held in the queue",
        "bob while the erasure waits",
    ]
    assert [r.text for r in rows if r.author_id is None] == [None]  # her one logged message: erased
    await assert_nothing_of_alice(world, sessions, ["locker code", "spare key", "alice before"])

    # A restart right after: her messages are still on Discord, and must stay out.
    await env.restart_bot(make_bot(world.services, EXTENSIONS))
    await settled(env)
    await assert_nothing_of_alice(world, sessions, ["locker code", "spare key", "alice before"])
    await env.advance_time(AFTER_THE_MARGIN)
    await alice.send(general, "alice after her erasure")  # she did not opt out: logged again
    await settled(env)
    assert texts(await logged(sessions, general.id), alice.id) == ["alice after her erasure"]


async def test_forget_me_while_the_backfill_pages_through_history(
    world: Friends, sessions: Sessions, history: DiscordHistory
) -> None:
    env, general, alice, bob = world.env, world.general, world.alice, world.bob
    await alice.send(general, "alice before the outage")
    await settled(env)
    cog = cog_of(env)
    await cog.on_disconnect()
    for k in range(250):  # three pages of history while the bot was away
        author = alice if k % 2 == 0 else bob
        env.backend.create_message(general.id, author.id, f"away {k} by {author.name}", broadcast=False)

    erasures: list[asyncio.Task[str]] = []

    def forget_me_mid_backfill() -> None:
        if history.pages == 2 and not erasures:  # page one is written, page two is being fetched
            pressed = env.backend.snowflake()  # the press, on Discord's clock
            erasure = forget_person(
                world.services, world.ingest, world.guild.id, alice.id, False, asked_at=pressed
            )
            erasures.append(asyncio.get_running_loop().create_task(erasure))

    history.on_page = forget_me_mid_backfill
    await cog.on_ready()
    await settled(env)
    assert erasures and (await erasures[0]).startswith("Erased")
    assert history.pages >= 3

    rows = await logged(sessions, general.id)
    assert texts(rows, bob.id) == [f"away {k} by bob" for k in range(1, 250, 2)]  # all of bob's
    await assert_nothing_of_alice(world, sessions, ["by alice", "alice before"])

    await env.restart_bot(make_bot(world.services, EXTENSIONS))
    await settled(env)
    await assert_nothing_of_alice(world, sessions, ["by alice", "alice before"])
    assert len(texts(await logged(sessions, general.id), bob.id)) == 125


async def test_an_erasure_still_waiting_when_the_bot_stops_erases_nothing(
    world: Friends, sessions: Sessions
) -> None:
    env, general, alice, bob = world.env, world.general, world.alice, world.bob
    await alice.send(general, "alice before the restart")
    await settled(env)
    cog, ingest = cog_of(env), ingest_now(env)
    ingest.wait_outside = declared(env)
    await cog.on_disconnect()
    await alice.send(general, "alice held when the bot stops: the boat is blue")
    await bob.send(general, "bob held when the bot stops")
    asked_first = (await alice.slash(general, "forget-me")).response.content  # type: ignore[union-attr]
    result = await press_forget_me(world, alice)  # waits for ingest: the bot stops first
    await env.restart_bot(make_bot(world.services, EXTENSIONS))
    await settled(env)

    # The erasure never committed while ingest still held her messages (they would have come
    # back by the next start's backfill): nothing was erased, nothing of hers lost, and she is
    # not told otherwise (a stopping bot answers "nothing was changed" if it still can).
    assert result.response is not None and result.response.content in (FAILED, asked_first)
    rows = await logged(sessions, general.id)
    assert texts(rows) == [
        "alice before the restart",
        "alice held when the bot stops: the boat is blue",
        "bob held when the bot stops",
    ]
    await press_forget_me(world, alice)  # again, now that the bot is back
    await settled(env)
    await assert_nothing_of_alice(world, sessions, ["boat is blue", "alice before"])
    await env.restart_bot(make_bot(world.services, EXTENSIONS))
    await settled(env)
    await assert_nothing_of_alice(world, sessions, ["boat is blue", "alice before"])
    assert texts(await logged(sessions, general.id), bob.id) == ["bob held when the bot stops"]


async def test_a_restart_right_after_forget_me_backfills_nothing_of_hers_from_before(
    world: Friends, sessions: Sessions
) -> None:
    env, general, alice, bob = world.env, world.general, world.alice, world.bob
    await alice.send(general, "alice before her erasure")
    await bob.send(general, "bob before her erasure")
    await settled(env)
    await press_forget_me(world, alice)
    await settled(env)
    # A message of hers Discord stamped at the erasure's moment, which never reached the bot
    # (in flight on the gateway when the process stopped).
    env.backend.create_message(
        general.id, alice.id, "alice in flight: the safe is behind the map", broadcast=False
    )
    await env.advance_time(AFTER_THE_MARGIN)
    env.backend.create_message(general.id, alice.id, "alice later, while the bot is down", broadcast=False)
    env.backend.create_message(general.id, bob.id, "bob later, while the bot is down", broadcast=False)
    await env.restart_bot(make_bot(world.services, EXTENSIONS))
    await settled(env)

    await assert_nothing_of_alice_but(world, sessions, ["safe is behind", "alice before"])
    rows = await logged(sessions, general.id)
    assert texts(rows, bob.id) == ["bob before her erasure", "bob later, while the bot is down"]
    assert texts(rows, alice.id) == ["alice later, while the bot is down"]  # after it: logged


async def test_memory_wipe_while_the_queue_is_held_keeps_only_what_came_after(
    world: Friends, sessions: Sessions, history: DiscordHistory
) -> None:
    env, general, alice, bob = world.env, world.general, world.alice, world.bob
    admin = world.admin
    assert admin is not None
    await alice.send(general, "alice before the wipe")
    await bob.send(general, "bob before the wipe")
    await settled(env)
    cog = cog_of(env)
    await cog.on_disconnect()
    env.backend.create_message(general.id, bob.id, "bob while away, before the wipe", broadcast=False)
    await alice.send(general, "alice held, before the wipe")
    await bob.send(general, "bob held, before the wipe")
    result = await admin.slash(general, "memory wipe")
    await admin.click(result.response, label="Wipe this memory")  # type: ignore[arg-type]
    assert result.response is not None and result.response.content.startswith("Wiped the memory of")
    await cog.on_ready()
    await settled(env)
    assert await logged(sessions, general.id) == [], "a message from before the wipe was logged after it"

    # After the wipe, while the bot is away again: the next READY's backfill starts at the wipe
    # (nothing logged since, so there is no last message to start from) and loses nothing.
    await cog.on_disconnect()
    await env.advance_time(AFTER_THE_MARGIN)
    env.backend.create_message(general.id, bob.id, "bob after the wipe, while away", broadcast=False)
    await alice.send(general, "alice after the wipe")
    await cog.on_ready()
    await settled(env)
    after = ["bob after the wipe, while away", "alice after the wipe"]
    assert texts(await logged(sessions, general.id)) == after
    await env.restart_bot(make_bot(world.services, EXTENSIONS))
    await settled(env)
    assert texts(await logged(sessions, general.id)) == after
    assert leaked(await table_dump(sessions), ["before the wipe"]) == []


async def test_her_messages_from_before_the_erasure_that_arrive_late_stay_out(
    world: Friends, sessions: Sessions
) -> None:
    env, general, alice, bob = world.env, world.general, world.alice, world.bob
    await alice.send(general, "alice before her erasure")
    await settled(env)
    result = await press_forget_me(world, alice)
    assert (await answer_of(env, result)).startswith("Erased 1 message")
    # Stamped by Discord before the erasure's moment, delivered after it committed (a slow
    # gateway, a RESUME replaying missed events): hers is refused, and bob's names nobody.
    await alice.send(general, "alice late: the pin is 5521")
    await bob.send(general, f"bob late: ask <@{alice.id}>")
    await settled(env)
    await env.advance_time(AFTER_THE_MARGIN)
    await alice.send(general, "alice after her erasure")
    await bob.send(general, f"bob after: ask <@{alice.id}>")
    await settled(env)

    rows = await logged(sessions, general.id)
    assert [(r.author_id, r.text) for r in rows if r.author_id is not None] == [
        (bob.id, "bob late: ask @unknown-user"),
        (alice.id, "alice after her erasure"),
        (bob.id, "bob after: ask @alice"),
    ]
    assert leaked(await table_dump(sessions), ["5521", "alice before"]) == []


async def test_forget_me_in_dms_while_her_dm_is_held_leaves_no_chat_of_hers(
    world: Friends, sessions: Sessions
) -> None:
    env, alice = world.env, world.alice
    await alice.user.send_dm("alice in her dm before: the flat is on floor nine")
    await settled(env)
    cog, ingest = cog_of(env), ingest_now(env)
    ingest.wait_outside = declared(env)
    await cog.on_disconnect()
    await alice.user.send_dm("alice in her dm, held: the alarm code is 0417")
    result = await alice.user.slash("forget-me")
    await alice.user.click(result.response, label="Erase my messages")  # type: ignore[arg-type]
    await cog.on_ready()
    assert "our direct-message memory is gone" in await answer_of(env, result)
    await settled(env)
    async with sessions() as s:
        dms = (await s.scalars(select(Chat.name).where(Chat.kind == "dm"))).all()
    assert dms == [], "her DM chat was made again for a message written before its erasure"
    await assert_nothing_of_alice(world, sessions, ["alarm code", "floor nine", "dm-alice"])
