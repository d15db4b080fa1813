"""Erasure and mentions (memory/privacy/mention_erasure.py): erasing person P takes P's name and id out
of the other people's messages that mention P, in the chats the erasure covers, and the lines
built over them are rebuilt; a deleted message loses its mention columns; an edit replaces
them. Run on the real database with the fake summarizer."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.storage.log import ChatKey, NewMessage
from memory.storage.models import MemoryRow, Message
from memory.text.mentions import MentionNames
from memory.tree.row import is_tiling
from tests.memory.helpers import START, fill, make_engine, message, new_chat, settle

Sessions = async_sessionmaker[AsyncSession]
VICTIM, VICTIM_ID = "Quincy", 918273645546  # distinctive: no other text or number holds them
GUILD, OTHER_GUILD = 77, 88


def mentioning(k: int, words: str, who: str = "Pia") -> NewMessage:
    """What live ingest logs for "<@VICTIM_ID> {words}" written by ``who``."""
    return replace(
        message(k, f"@{VICTIM} {words}", author=who),
        mention_ids=(VICTIM_ID,),
        mention_names=(VICTIM,),
    )


async def dump(sessions: Sessions, chat_ids: list[int]) -> str:
    """Every message, node and memory row of these chats, as text."""
    out = []
    async with sessions() as s:
        for table in ("messages", "nodes", "memory_rows"):
            rows = await s.execute(
                text(f"SELECT t::text FROM {table} t WHERE chat_id = ANY(:ids)"), {"ids": chat_ids}
            )
            out.extend(rows.scalars().all())
    return "\n".join(out)


async def still_mentioning(sessions: Sessions, chat_ids: list[int]) -> int:
    async with sessions() as s:
        found = await s.scalar(
            text("SELECT count(*) FROM messages WHERE chat_id = ANY(:ids) AND :p = ANY(mention_ids)"),
            {"ids": chat_ids, "p": VICTIM_ID},
        )
    return int(found or 0)


async def test_erasing_a_person_takes_their_name_out_of_messages_that_mention_them(
    sessions: Sessions,
) -> None:
    engine, _, clock = make_engine(sessions)
    general = await new_chat(engine)
    thread = await engine.ensure_chat(
        ChatKey("thread", "plans", discord_id=556, guild_id=GUILD, parent_id=555)
    )
    far = await new_chat(engine, "far", guild_id=OTHER_GUILD, discord_id=557)
    msgs = [message(k) for k in range(60)]
    msgs[7] = mentioning(7, "owes me 20 euros for the padel court")
    msgs[20] = replace(message(20, f"lunch with {VICTIM} tomorrow", author="Lo"), author_id=VICTIM_ID)
    msgs[20] = replace(msgs[20], author_name=VICTIM)  # the victim's own message
    msgs[33] = mentioning(33, "and @Lo booked the boat", who="Max")
    await fill(engine, clock, general, msgs, compact_every=4)
    await engine.append(thread, mentioning(100, "is bringing the tent"))
    await engine.append(far, mentioning(200, "is in the other server too"))
    await settle(engine, clock, general)
    assert f"@{VICTIM}" in await dump(sessions, [general]), "the name was shown before the erasure"
    assert await still_mentioning(sessions, [general, thread]) == 3

    report = await engine.erase_author(GUILD, VICTIM_ID)

    assert report.messages == 1 and report.mentions == 3
    assert await still_mentioning(sessions, [general, thread]) == 0
    after = await dump(sessions, [general, thread])
    assert VICTIM not in after and str(VICTIM_ID) not in after
    # The rest of what others wrote stays, with "@unknown-user" where the name was.
    assert "@unknown-user owes me 20 euros for the padel court" in await engine.zoom(general, 7, 1)
    assert "@unknown-user and @Lo booked the boat" in await engine.zoom(general, 33, 1)
    async with sessions() as s:
        row = await s.get(Message, (general, 33))
        assert row is not None and row.author_name == "Max" and row.mention_ids is None
        thread_row = await s.get(Message, (thread, 0))
        assert thread_row is not None and thread_row.text == "@unknown-user is bringing the tent"
    # Another server's memory is another scope: its mention stays until erased there.
    assert f"@{VICTIM} is in the other server too" in await dump(sessions, [far])
    assert await still_mentioning(sessions, [far]) == 1

    # Lines are rebuilt without the name, and the row shows only built lines again.
    await engine.compact(general, until_idle=True)
    async with sessions() as s:
        state = await s.get(MemoryRow, general)
        assert state is not None and not state.needs_repair
        assert is_tiling([(a, b) for a, b in state.shown], state.boundary)
    assert VICTIM not in await dump(sessions, [general, thread])
    assert VICTIM not in (await engine.prompt_view(general)).render()


async def test_erasing_a_person_in_direct_messages_scrubs_other_dms(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    theirs = await engine.ensure_chat(ChatKey("dm", "dm-quincy", discord_id=901))
    others = await engine.ensure_chat(ChatKey("dm", "dm-pia", discord_id=902))
    guild_chat = await new_chat(engine)
    await engine.append(theirs, replace(message(0, "hi bot", author="Lo"), author_id=VICTIM_ID))
    await engine.append(others, mentioning(1, "said hi to you"))
    await engine.append(guild_chat, mentioning(2, "in the server"))

    report = await engine.erase_author(None, VICTIM_ID)

    assert report.mentions == 1
    assert await engine.chat_by_discord_id(901) is None
    assert await still_mentioning(sessions, [others]) == 0
    assert "@unknown-user said hi to you" in await engine.zoom(others, 0, 1)
    assert await still_mentioning(sessions, [guild_chat]) == 1  # a server is not the DM scope


async def test_a_deleted_message_keeps_no_mention(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await new_chat(engine)
    await engine.append(chat, mentioning(0, "owes me money"))
    assert await still_mentioning(sessions, [chat]) == 1
    await engine.erase_messages(chat, [10_000])
    async with sessions() as s:
        row = await s.get(Message, (chat, 0))
        assert row is not None and row.erased_at is not None
        assert row.mention_ids is None and row.mention_names is None


async def test_an_edit_replaces_the_mentions(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await new_chat(engine)
    await engine.append(chat, mentioning(0, "owes me money"))
    await engine.edit(chat, 10_000, "<@1002> owes me money", (), MentionNames(users={1002: "Lo"}))
    async with sessions() as s:
        row = await s.get(Message, (chat, 0))
        assert row is not None and row.text == "@Lo owes me money"
        assert row.mention_ids == [1002] and row.mention_names == ["Lo"]
    # An edit that leaves a raw mention (no name known) still records who it mentions.
    await engine.edit(chat, 10_000, f"<@{VICTIM_ID}> owes me money")
    assert await still_mentioning(sessions, [chat]) == 1
    report = await engine.erase_author(GUILD, VICTIM_ID)
    assert report.mentions == 1
    assert "@unknown-user owes me money" in await engine.zoom(chat, 0, 1)


async def test_raw_mentions_appended_without_names_are_found_by_an_erasure(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await new_chat(engine)
    raw = NewMessage("Pia", START, f"did <@!{VICTIM_ID}> pay you back?", author_id=1000, snowflake=1)
    await engine.append_many(chat, [raw])
    assert await still_mentioning(sessions, [chat]) == 1
    await engine.erase_author(GUILD, VICTIM_ID)
    assert "did @unknown-user pay you back?" in await engine.zoom(chat, 0, 1)
    assert str(VICTIM_ID) not in await dump(sessions, [chat])


async def test_erasing_a_person_everywhere_reaches_chats_where_they_are_only_mentioned(
    sessions: Sessions,
) -> None:
    """`eva forget --user` without a guild: a chat of another server where the person never
    wrote but is mentioned loses their name and id too."""
    engine, _, _clock = make_engine(sessions)
    general = await new_chat(engine)
    far = await new_chat(engine, "far", guild_id=OTHER_GUILD, discord_id=557)
    await engine.append(general, replace(message(0, "hello"), author_id=VICTIM_ID, author_name=VICTIM))
    await engine.append(far, mentioning(1, "is in the other server too"))
    assert await still_mentioning(sessions, [far]) == 1

    report = await engine.erase_author_everywhere(VICTIM_ID)

    assert report.messages == 1
    assert await still_mentioning(sessions, [general, far]) == 0
    after = await dump(sessions, [general, far])
    assert VICTIM not in after and str(VICTIM_ID) not in after


async def test_a_new_version_of_a_message_never_names_the_person_taken_out_of_it(sessions: Sessions) -> None:
    """The engine renders an edit itself, by the rules of a sealed message: Discord's new text
    still says <@victim>, the log keeps @unknown-user; someone else the log named stays named;
    anyone the log cannot tell from the erased person stays unnamed too."""
    engine, _, _ = make_engine(sessions)
    chat = await new_chat(engine)
    lo = 1002
    said = replace(
        message(0, f"@{VICTIM} and @Lo owe me money", author="Pia"),
        mention_ids=(VICTIM_ID, lo),
        mention_names=(VICTIM, "Lo"),
    )
    await engine.append(chat, said)
    await engine.erase_author(GUILD, VICTIM_ID)
    names = MentionNames(users={VICTIM_ID: VICTIM, lo: "Lo", 1003: "Max"})

    same = await engine.edit(chat, 10_000, f"<@{VICTIM_ID}> and <@{lo}> owe me money", (), names)
    assert same == 0, "only where the person was rendered: no edit"
    await engine.edit(chat, 10_000, f"<@{VICTIM_ID}> and <@{lo}> owe me 30 euros, ask <@1003>", (), names)
    async with sessions() as s:
        row = await s.get(Message, (chat, 0))
        assert row is not None and row.edited_at is not None
        assert row.text == "@unknown-user and @Lo owe me 30 euros, ask @unknown-user"
        assert row.mention_ids == [lo] and row.mention_names == ["Lo"]
    assert VICTIM not in await dump(sessions, [chat]) and str(VICTIM_ID) not in await dump(sessions, [chat])


async def test_a_bot_message_with_a_name_taken_out_keeps_it_out(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await new_chat(engine)
    await engine.append(
        chat, replace(message(0, "hello", author="Lo"), author_id=VICTIM_ID, author_name=VICTIM)
    )
    bot = replace(message(1, f"{VICTIM} is bringing the tent", author="Eva"), author_id=9, is_bot=True)
    await engine.append(chat, bot)
    report = await engine.erase_author(GUILD, VICTIM_ID)
    assert report.names == 1
    assert "@unknown-user is bringing the tent" in await engine.zoom(chat, 1, 1)
    # Discord's copy of the bot's message still has the name: no edit, and the name stays out.
    assert await engine.edit(chat, 10_001, f"{VICTIM} is bringing the tent") == 0
    assert VICTIM not in await dump(sessions, [chat])
    await engine.edit(chat, 10_001, "the tent is packed")  # the bot changed its words
    assert "Eva: the tent is packed" in await engine.zoom(chat, 1, 1)
