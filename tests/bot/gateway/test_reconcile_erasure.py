"""A restart never undoes an erasure (bot/gateway/reconcile.py, memory/privacy/erase.py edit_message): bob wrote
``hey <@alice> bring the tent``, alice ran /forget-me (no opt-out) and the log shows
``hey @unknown-user ...``. Discord still shows bob's ``<@alice>``; the reconnect window after the
next start, the background walk over the old history and a live edit of bob's message all render
it the way the log does: a copy that differs only where alice was taken out is not an edit, and
a real edit of bob's keeps her ``@unknown-user``. Real discord.py against the Discord fake over
TCP, each start a new bot on the same database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.forget import forget_person
from bot.commands.status import memory_status
from bot.services import Services
from memory.storage.log import ChatKey, NewMessage
from tests.fakes.discord_api import FakeDiscord
from tests.worlds.reconcile_world import eventually, fake, row_of, running, start_bot

__all__ = ["fake"]  # the fixture

NICK = "Zephyrine"  # alice's name in the guild: distinctive, so any trace of it is found


async def dump(sessions: async_sessionmaker[AsyncSession]) -> str:
    """Every row of the tables that hold messages, lines and chats, as text."""
    async with sessions() as s:
        rows = []
        for table in ("messages", "nodes", "chats"):
            rows += (await s.scalars(text(f"SELECT t::text FROM {table} t"))).all()
    return "\n".join(rows)


async def reconciled(services: Services, chat_id: int) -> bool:
    return "Reconciled with Discord: recent messages 20" in await memory_status(services, chat_id, "#general")


async def test_the_reconnect_window_and_a_live_edit_keep_an_erased_mention_erased(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    ids = fake.ids
    fake.world.guilds[ids.guild].members[ids.alice].nick = NICK
    bot = await start_bot(services)
    tent = fake.chat.post_user_message(ids.general, ids.bob, f"hey <@{ids.alice}> bring the tent")
    stove = fake.chat.post_user_message(ids.general, ids.bob, f"<@{ids.alice}> can you bring the stove")
    logged = await eventually(lambda: row_of(sessions, stove["id"]))
    assert logged.text == f"@{NICK} can you bring the stove" and logged.mention_ids == [ids.alice]
    said = await forget_person(services, None, ids.guild, ids.alice, opt_out=False)  # what /forget-me runs
    assert "Your name is gone from 2 messages" in said
    await bot.stop()
    # While eva is away bob really edits one of them: Discord's copy still mentions alice.
    fake.chat.edit_user_message(int(stove["id"]), f"<@{ids.alice}> can you bring the stove and the pegs")

    async with running(services) as bot:
        info = await services.engine.chat_by_discord_id(ids.general)
        assert info is not None
        await eventually(lambda: reconciled(services, info.id))
        await bot.settled()
        kept = await row_of(sessions, tent["id"])
        assert kept is not None and (kept.text, kept.edited_at) == ("hey @unknown-user bring the tent", None)
        edited = await row_of(sessions, stove["id"])
        assert edited is not None and edited.edited_at is not None, "bob's real edit reached the log"
        assert edited.text == "@unknown-user can you bring the stove and the pegs"
        after = await dump(sessions)
        assert NICK not in after and str(ids.alice) not in after

        # A live edit of bob's old message, after the erasure: she stays out of it too.
        fake.chat.edit_user_message(int(tent["id"]), f"hey <@{ids.alice}> bring the tent tomorrow")

        async def live_edit_logged() -> bool:
            row = await row_of(sessions, tent["id"])
            return row is not None and row.text is not None and row.text.endswith("tomorrow")

        await eventually(live_edit_logged)
        row = await row_of(sessions, tent["id"])
        assert row is not None and row.text == "hey @unknown-user bring the tent tomorrow"
        # What bob writes after the erasure is new: alice did not opt out, so she is named there.
        fresh = fake.chat.post_user_message(ids.general, ids.bob, f"<@{ids.alice}> welcome back")
        new_row = await eventually(lambda: row_of(sessions, fresh["id"]))
        assert new_row.text == f"@{NICK} welcome back" and new_row.mention_ids == [ids.alice]


async def test_the_background_walk_keeps_an_erased_mention_erased(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    """Ten days old: only the walk over the whole history reaches it, after a restart."""
    ids = fake.ids
    fake.world.guilds[ids.guild].members[ids.alice].nick = NICK
    old = datetime.now(UTC) - timedelta(days=10)
    posted = [
        fake.chat.post_user_message(
            ids.general, ids.bob, content, when=old + timedelta(seconds=k), announce=False
        )
        for k, content in enumerate(
            [f"hey <@{ids.alice}> bring the tent", f"ask <@{ids.bob}> and <@{ids.alice}>"]
        )
    ]
    posted.append(fake.chat.post_user_message(ids.general, ids.bob, "recent", announce=False))
    engine = services.engine
    chat_id = await engine.ensure_chat(ChatKey("text", "general", discord_id=ids.general, guild_id=ids.guild))
    shown = [  # what live ingest logged for them at the time (mentions as names, ids beside)
        ("hey @Zephyrine bring the tent", (ids.alice,), (NICK,)),
        ("ask @bob and @Zephyrine", (ids.bob, ids.alice), ("bob", NICK)),
        ("recent", (), ()),
    ]
    await engine.append_many(chat_id, [
        NewMessage("bob", datetime.fromisoformat(m["timestamp"]), words, author_id=ids.bob,
                   snowflake=int(m["id"]), mention_ids=mention_ids, mention_names=names)
        for m, (words, mention_ids, names) in zip(posted, shown, strict=True)
    ])  # fmt: skip
    await forget_person(services, None, ids.guild, ids.alice, opt_out=False)
    services.settings.reconcile_period = 0.0  # every page due at once

    async with running(services) as bot:
        assert await bot.reconciler.step() == 1
        await bot.settled()
        first, second = [await row_of(sessions, m["id"]) for m in posted[:2]]
        assert first is not None and (first.text, first.edited_at) == (
            "hey @unknown-user bring the tent",
            None,
        )
        assert second is not None and (second.text, second.edited_at) == ("ask @bob and @unknown-user", None)
        assert second.mention_ids == [ids.bob]
        after = await dump(sessions)
        assert NICK not in after and str(ids.alice) not in after
