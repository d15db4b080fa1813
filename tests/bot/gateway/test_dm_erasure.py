"""A DM memory is found by its channel and its person, not by what they still have there
(bot/gateway/chats.py, memory/engine.py): after they deleted their own DM message, /forget-me still
erases the bot's reply that quoted it, and nothing of them is left in any table. A person
who opted out of DM memory gets no chat row at all when they write again."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.forget import forget_person
from bot.services import Services
from memory.storage.models import Chat
from tests.fakes.discord_api import FakeDiscord
from tests.hardening.support import leaked, table_dump
from tests.worlds.reconcile_world import eventually, fake, row_of, running

__all__ = ["fake"]  # the fixture


async def test_forget_me_after_deleting_own_dm_messages_leaves_nothing_of_that_person(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    ids, world = fake.ids, fake.world
    alice = world.users[ids.alice]
    alice.global_name = "Alice Pelletier"  # the display name the log stores
    alice_dm, bob_dm = world.open_dm(ids.alice), world.open_dm(ids.bob)
    async with running(services) as bot:
        hers = fake.chat.post_user_message(alice_dm.id, ids.alice, "my pin code is 4417 pelican")
        quote = fake.chat.bot_send(alice_dm.id, {"content": "Noted: your pin code is 4417 pelican"})
        his = fake.chat.post_user_message(bob_dm.id, ids.bob, "bob keeps his otter")
        for message in (hers, quote, his):
            await eventually(lambda m=message: row_of(sessions, m["id"]))  # type: ignore[misc]
        fake.chat.delete_message(int(hers["id"]))  # her own message goes; the bot's quote stays

        async def erased() -> bool:
            row = await row_of(sessions, hers["id"])
            return row is not None and row.erased_at is not None

        await eventually(erased)
        before = await table_dump(sessions)
        assert leaked(before, ["pelican", "Alice Pelletier", str(ids.alice)]), "planted where we look"

        await forget_person(services, bot.ingest, None, ids.alice, opt_out=False)
        await bot.settled()
        dump = await table_dump(sessions)
        assert leaked(dump, ["4417", "pelican", "Alice Pelletier", "alice", str(ids.alice)]) == []
        assert "otter" in dump and str(ids.bob) in dump  # bob's DM memory is untouched


async def test_an_opted_out_person_who_writes_a_dm_gets_no_chat_row(
    fake: FakeDiscord, services: Services, sessions: async_sessionmaker[AsyncSession]
) -> None:
    ids = fake.ids
    dm = fake.world.open_dm(ids.alice)
    await services.engine.opt_out(None, ids.alice)
    async with running(services) as bot:
        fake.chat.post_user_message(dm.id, ids.alice, "hello again after opting out")
        fake.chat.bot_send(dm.id, {"content": "an answer in that DM"})
        control = fake.chat.post_user_message(fake.world.open_dm(ids.bob).id, ids.bob, "bob writes too")
        await eventually(lambda: row_of(sessions, control["id"]))
        await bot.settled()
        async with sessions() as s:
            rows = (
                await s.execute(select(Chat.discord_id, Chat.recipient_id).where(Chat.kind == "dm"))
            ).all()
        assert [tuple(r) for r in rows] == [(fake.world.open_dm(ids.bob).id, ids.bob)]
