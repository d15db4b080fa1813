"""What changes on Discord while the bot is away reaches the memory (bot/gateway/reconcile.py): a
message deleted or edited while it was stopped is erased or updated when it comes back, an
old one by the background walk (which resumes after a restart), a guild that removed it is
forgotten at READY (its opt-outs kept), a guild in an outage is not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.status import memory_status
from bot.services import Services
from memory.storage.log import ChatKey, NewMessage
from memory.storage.models import Message, OptOut, ReconcileCursor
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_model import READ_MESSAGE_HISTORY
from tests.worlds.reconcile_world import (
    chats_of_guild,
    eventually,
    fake,
    first_run,
    row_of,
    running,
    start_bot,
)

__all__ = ["fake"]  # the fixture


async def test_a_delete_and_an_edit_made_while_stopped_are_reconciled_at_the_next_start(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    ids = fake.ids
    keep, gone, edit = await first_run(
        fake,
        services,
        sessions,
        (ids.alice, "keep these words"),
        (ids.bob, "bob deleted this later"),
        (ids.alice, "alice typed this first"),
    )
    # Nobody is connected: the next events go nowhere (a new start IDENTIFYs afresh).
    assert not [s for s in fake.gateway.describe() if s["connected"]]

    fake.chat.delete_message(int(gone["id"]))
    fake.chat.edit_user_message(int(edit["id"]), "alice fixed it while eva was away")
    missed = fake.chat.post_user_message(ids.general, ids.bob, "new while away")

    async with running(services):
        erased = await row_of(sessions, gone["id"])
        assert erased is not None and erased.erased_at is not None
        assert erased.text is None and erased.author_id is None and erased.author_name is None
        edited = await row_of(sessions, edit["id"])
        assert edited is not None and edited.text == "alice fixed it while eva was away"
        kept = await row_of(sessions, keep["id"])
        assert kept is not None and kept.text == "keep these words"
        added = await row_of(sessions, missed["id"])
        assert added is not None and added.text == "new while away"  # the backfill still runs first
        info = await services.engine.chat_by_discord_id(ids.general)
        assert info is not None
        status = await memory_status(services, info.id, "#general")
        assert "Reconciled with Discord: recent messages 20" in status  # a date, not "never"


async def seed_old_history(
    fake: FakeDiscord, services: Services, count: int, days_ago: float
) -> tuple[int, list[dict[str, str]]]:
    """``count`` messages from ``days_ago`` days back, on Discord and in the log, plus one
    from now (so the reconnect window, the day before it, does not reach the old ones)."""
    ids = fake.ids
    start = datetime.now(UTC) - timedelta(days=days_ago)
    posted = [
        fake.chat.post_user_message(
            ids.general, ids.alice, f"old note {k}", when=start + timedelta(seconds=k), announce=False
        )
        for k in range(count)
    ]
    posted.append(fake.chat.post_user_message(ids.general, ids.bob, "recent", announce=False))
    engine = services.engine
    chat_id = await engine.ensure_chat(ChatKey("text", "general", discord_id=ids.general, guild_id=ids.guild))
    await engine.append_many(
        chat_id,
        [
            NewMessage(
                m["author"]["username"],
                datetime.fromisoformat(m["timestamp"]),
                m["content"],
                author_id=int(m["author"]["id"]),
                snowflake=int(m["id"]),
            )
            for m in posted
        ],
    )
    return chat_id, posted


def history_requests(fake: FakeDiscord, channel_id: int) -> list[dict[str, str]]:
    return [r["query"] for r in fake.requests("GET", f"/channels/{channel_id}/messages")]


async def test_the_background_walk_finds_an_old_deletion_and_resumes_after_a_restart(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    ids = fake.ids
    chat_id, posted = await seed_old_history(fake, services, 250, days_ago=10)
    early, late, edited = posted[5], posted[180], posted[120]
    fake.chat.delete_message(int(early["id"]))  # no bot connected: nobody hears of these
    fake.chat.delete_message(int(late["id"]))
    fake.chat.edit_user_message(int(edited["id"]), "rewritten ten days later")
    services.settings.reconcile_period = 0.0  # every page due at once (the pace is tested pure)

    async with running(services) as bot:
        row = await row_of(sessions, early["id"])
        assert row is not None and row.text == "old note 5", "the reconnect window covers one day only"
        assert await bot.reconciler.step() == 1  # page one: messages 0-99 of Discord's history
        await bot.settled()
        row = await row_of(sessions, early["id"])
        assert row is not None and row.erased_at is not None and row.text is None
        row = await row_of(sessions, late["id"])
        assert row is not None and row.text == "old note 180"  # not reached yet

    fake.request_log.clear()
    async with running(services) as bot:
        assert await bot.reconciler.step() == 1
        await bot.settled()
        # Resumed where the first run stopped: after the 100th message on Discord, not at 0.
        walk = [q for q in history_requests(fake, ids.general) if q.get("limit") == "100"]
        on_discord = [m for m in posted if m is not early and m is not late]
        assert walk[-1]["after"] == on_discord[99]["id"]
        row = await row_of(sessions, late["id"])
        assert row is not None and row.erased_at is not None and row.text is None
        row = await row_of(sessions, edited["id"])
        assert row is not None and row.text == "rewritten ten days later"

        assert await bot.reconciler.step() == 1  # the last, short page ends the walk
        await bot.settled()
        async with sessions() as s:
            cursor = await s.get(ReconcileCursor, chat_id)
            assert cursor is not None and cursor.history_reconciled_at is not None
            assert cursor.walk_after == 0
        services.settings.reconcile_period = 30 * 86_400.0
        async with sessions() as s, s.begin():  # as if this walk had finished just now
            cursor = await s.get(ReconcileCursor, chat_id)
            assert cursor is not None
            cursor.due_at = datetime.now(UTC) + timedelta(days=30)
        fake.request_log.clear()
        assert await bot.reconciler.step() == 0  # nothing due: no page, no request to Discord
        assert history_requests(fake, ids.general) == []
        status = await memory_status(services, chat_id, "#general")
        assert "whole history 20" in status


async def test_a_guild_that_removed_the_bot_while_away_is_forgotten_and_opt_outs_survive(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    ids = fake.ids
    bot = await start_bot(services)
    said = fake.chat.post_user_message(ids.general, ids.bob, "bob was here")
    await eventually(lambda: row_of(sessions, said["id"]))
    await services.engine.opt_out(ids.guild, ids.alice)  # what /forget-me with the opt-out does
    await bot.stop()

    fake.world.kick_bot(ids.guild)  # GUILD_DELETE reaches nobody
    async with running(services) as bot:
        assert bot.bot.get_guild(ids.guild) is None
        assert await chats_of_guild(sessions, ids.guild) == []
        assert await row_of(sessions, said["id"]) is None
        async with sessions() as s:
            kept = (await s.scalars(select(OptOut.user_id).where(OptOut.guild_id == ids.guild))).all()
        assert list(kept) == [ids.alice], "the opt-out holds only ids: it stays"

        fake.world.invite_bot(ids.guild)  # re-invited, live
        await eventually(lambda: _guild_back(bot.bot, ids.guild))
        hers = fake.chat.post_user_message(ids.general, ids.alice, "alice after the re-invite")
        his = fake.chat.post_user_message(ids.general, ids.bob, "bob after the re-invite")
        await eventually(lambda: row_of(sessions, his["id"]))
        await bot.settled()
        assert await row_of(sessions, hers["id"]) is None
        async with sessions() as s:
            authors = (await s.scalars(select(Message.author_id))).all()
        assert ids.alice not in authors


async def _guild_back(client: object, guild_id: int) -> bool:
    guild = client.get_guild(guild_id)  # type: ignore[attr-defined]
    return guild is not None and not guild.unavailable


async def test_a_guild_in_an_outage_at_ready_is_kept_and_reconciled_when_it_is_back(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    ids = fake.ids
    said, doomed = await first_run(
        fake,
        services,
        sessions,
        (ids.bob, "said before the outage"),
        (ids.alice, "deleted during the outage"),
    )

    fake.world.start_outage(ids.guild)
    async with running(services) as bot:
        guild = bot.bot.get_guild(ids.guild)
        assert guild is not None and guild.unavailable  # listed in READY, no GUILD_CREATE
        assert len(await chats_of_guild(sessions, ids.guild)) == 1
        row = await row_of(sessions, said["id"])
        assert row is not None and row.text == "said before the outage"

        fake.chat.delete_message(int(doomed["id"]))  # the guild is unavailable: no event
        fake.world.end_outage(ids.guild)
        await eventually(lambda: _guild_back(bot.bot, ids.guild))

        async def erased() -> bool:
            row = await row_of(sessions, doomed["id"])
            return row is not None and row.erased_at is not None

        await eventually(erased)


async def test_a_channel_whose_history_the_bot_cannot_read_is_not_taken_for_empty(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    ids = fake.ids
    (said,) = await first_run(fake, services, sessions, (ids.bob, "still here, only unreadable"))
    # Read Message History taken away: Discord then answers history with [] (no error).
    deny = {"id": str(ids.guild), "type": 0, "allow": "0", "deny": str(READ_MESSAGE_HISTORY)}
    fake.world.channels[ids.general].permission_overwrites = [deny]

    async with running(services):
        row = await row_of(sessions, said["id"])
        assert row is not None and row.erased_at is None and row.text == "still here, only unreadable"


async def test_a_live_edit_during_a_page_wins_over_the_page(
    fake: FakeDiscord,
    services: Services,
    sessions: async_sessionmaker[AsyncSession],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = fake.ids
    bot = await start_bot(services)
    said = fake.chat.post_user_message(ids.general, ids.alice, "first version")
    await eventually(lambda: row_of(sessions, said["id"]))
    await bot.stop()
    fake.chat.edit_user_message(int(said["id"]), "second version")  # lost: nobody connected
    serve = fake.chat.bot_history

    def page_then_live_edit(channel_id: int, query: dict[str, str]) -> list[dict[str, object]]:
        page = serve(channel_id, query)
        if int(query.get("after", 0)) < int(said["id"]):  # the reconcile window, not the backfill
            monkeypatch.setattr(fake.chat, "bot_history", serve)
            # Edited again while the page is on its way: the page is stale when it arrives.
            fake.chat.edit_user_message(int(said["id"]), "third version")
        return page

    monkeypatch.setattr(fake.chat, "bot_history", page_then_live_edit)
    async with running(services) as bot:

        async def third() -> bool:
            row = await row_of(sessions, said["id"])
            return row is not None and row.text == "third version"

        await eventually(third)
        await bot.settled()
        row = await row_of(sessions, said["id"])
        assert row is not None and row.text == "third version"  # the live edit came last


async def test_a_message_whose_mentions_are_logged_as_names_is_not_taken_for_an_edit(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    """The log holds ``@bob``, Discord ``<@id>``: the comparison renders Discord's text the way
    ingest does, or every pass would "edit" the message back to raw ids."""
    ids = fake.ids
    bot = await start_bot(services)
    named = fake.chat.post_user_message(ids.general, ids.alice, f"did <@{ids.bob}> pay you back?")
    logged = await eventually(lambda: row_of(sessions, named["id"]))
    assert logged.text is not None and "<@" not in logged.text and "@bob" in logged.text.lower()
    await bot.stop()

    async with running(services) as bot:
        info = await services.engine.chat_by_discord_id(ids.general)
        assert info is not None

        async def reconciled() -> bool:
            status = await memory_status(services, info.id, "#general")
            return "Reconciled with Discord: recent messages 20" in status

        await eventually(reconciled)
        after = await row_of(sessions, named["id"])
        assert after is not None
        assert (after.text, after.edited_at) == (logged.text, None)
        assert list(after.mention_ids or []) == [ids.bob]
