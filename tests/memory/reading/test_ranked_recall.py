"""Recall as people ask: stemming in the chat's language, partial matches below full ones, the
author's name, mentions, accents, words the chat never used, and nothing of an erased person."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.engine import MemoryEngine
from memory.policy.guild_settings import GuildSettingsStore
from memory.storage.search_config import GUESS_AT
from tests.memory.helpers import make_engine, message, new_chat

Sessions = async_sessionmaker[AsyncSession]
MAX_ID = 1001  # tests.memory.helpers: Max's author id

# Everyday English chat lines (function words the guess counts, words the tests never ask for).
ENGLISH = [
    "what do you think about the new schedule for this week",
    "it was not that bad but I have to check with the others",
    "you are right, that is what I said to them yesterday",
    "we can talk about it later when everyone is back home",
]
SWEDISH = [
    "vad tycker du om det nya schemat för den här veckan",
    "det var inte så illa men jag måste kolla med de andra",
    "du har rätt, det är vad jag sa till dem igår kväll",
    "vi kan prata om det senare när alla är hemma igen",
]


def hits(found: str) -> list[int]:
    """The message indexes of the hits, best first (full and partial)."""
    return [int(line.split("#")[1].split(" ")[0]) for line in found.splitlines() if "it " in line[:12]]


def heads(found: str) -> list[str]:
    return [line for line in found.splitlines() if line.startswith(("Hit ", "Partial hit "))]


async def chat_with(
    engine: MemoryEngine, lines: list[tuple[str, str]], filler: list[str] | None = None
) -> int:
    """A chat of GUESS_AT filler messages (so its language is chosen), then ``lines``
    (text, author) at indexes GUESS_AT, GUESS_AT + 1, ..."""
    chat = await new_chat(engine)
    filler = filler or ENGLISH
    first = [message(k, filler[k % len(filler)], "Lo") for k in range(GUESS_AT)]
    rest = [message(GUESS_AT + k, body, who) for k, (body, who) in enumerate(lines)]
    await engine.append_many(chat, first + rest)
    return chat


async def config_of(sessions: Sessions, chat: int) -> str:
    async with sessions() as s:
        return str(await s.scalar(text("SELECT search_config::text FROM chats WHERE id = :c"), {"c": chat}))


async def configs_of_rows(sessions: Sessions, chat: int) -> dict[str, int]:
    async with sessions() as s:
        rows = await s.execute(
            text("SELECT search_config::text, count(*) FROM messages WHERE chat_id = :c GROUP BY 1"),
            {"c": chat},
        )
        return {str(config): int(n) for config, n in rows}


async def test_an_english_chat_is_stemmed_and_finds_other_forms_of_a_word(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(
        engine,
        [
            ("the study groups meet on thursdays", "Pia"),
            ("my sister is getting married, the wedding is in june", "Max"),
        ],
    )
    assert await config_of(sessions, chat) == "eva_english"
    assert hits(await engine.recall(chat, "group"))[0] == GUESS_AT
    assert hits(await engine.recall(chat, "thursday"))[0] == GUESS_AT
    assert hits(await engine.recall(chat, "weddings"))[0] == GUESS_AT + 1
    assert hits(await engine.recall(chat, "marry"))[0] == GUESS_AT + 1


async def test_the_word_as_typed_ranks_above_a_shorter_message_with_only_its_stem(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(
        engine,
        [
            ("the race in hobart was long and hard, and far too hot for me", "Max"),
            ("switched races", "Kim"),  # the newest and the shortest: first by length alone
        ],
    )
    assert await config_of(sessions, chat) == "eva_english"
    assert hits(await engine.recall(chat, "race"))[:2] == [GUESS_AT, GUESS_AT + 1]
    assert hits(await engine.recall(chat, "races"))[:2] == [GUESS_AT + 1, GUESS_AT]


async def test_a_swedish_chat_is_stemmed_in_swedish(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(engine, [("bröllopet är i Borås i juni", "Max")], filler=SWEDISH)
    assert await config_of(sessions, chat) == "eva_swedish"
    assert hits(await engine.recall(chat, "bröllop"))[0] == GUESS_AT


async def test_a_young_chat_matches_words_as_typed_until_its_language_is_chosen(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await new_chat(engine)
    await engine.append_many(chat, [message(0, "the study groups meet on thursdays", "Pia")])
    assert await config_of(sessions, chat) == "None"
    assert hits(await engine.recall(chat, "groups")) == [0]
    assert (await engine.recall(chat, "grouping")).startswith("No message")  # eva_simple: no stems
    # One message at a time, the hundredth chooses (the single-append path) and re-indexes #0.
    for k in range(1, GUESS_AT):
        await engine.append(chat, message(k, ENGLISH[k % len(ENGLISH)], "Lo"))
    assert await config_of(sessions, chat) == "eva_english"
    assert hits(await engine.recall(chat, "grouping")) == [0]


async def test_a_partial_match_ranks_below_every_full_one_and_says_what_it_has(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(
        engine,
        [
            ("padel tonight? courts are free", "Pia"),  # 1 of 3 words, the newest
            ("padel on saturday at gothia", "Lo"),  # every word
            ("saturday padel, gothia", "Pia"),  # every word, short
            ("saturday brunch at gothia", "Lo"),  # 2 of 3
        ][::-1],
    )
    found = await engine.recall(chat, "padel saturday gothia", limit=5)
    order = hits(found)
    # The list is reversed: #100 "saturday brunch at gothia", #101 "saturday padel, gothia",
    # #102 "padel on saturday at gothia", #103 "padel tonight?".
    assert set(order[:2]) == {GUESS_AT + 1, GUESS_AT + 2} and order[2:] == [GUESS_AT, GUESS_AT + 3]
    assert heads(found)[0].startswith("Hit 1:") and heads(found)[1].startswith("Hit 2:")
    assert heads(found)[2] == f"Partial hit 3: message #{GUESS_AT} (has: saturday, gothia)"
    assert heads(found)[3] == f"Partial hit 4: message #{GUESS_AT + 3} (has: padel)"


async def test_an_exact_phrase_ranks_above_the_same_words_apart(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(
        engine, [("the blue whale was seen off the coast", "Pia"), ("a whale, mostly blue in colour", "Lo")]
    )
    assert hits(await engine.recall(chat, "blue whale"))[:2] == [GUESS_AT, GUESS_AT + 1]


async def test_the_authors_name_is_searched_with_the_text(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(
        engine,
        [
            ("can't, my sister's wedding in Borås", "Max"),
            ("the wedding photos are up", "Pia"),  # newer, same word, another author
        ],
    )
    found = await engine.recall(chat, "Max wedding")
    assert hits(found)[0] == GUESS_AT and heads(found)[0].startswith("Hit 1:")
    assert hits(found)[1] == GUESS_AT + 1


async def test_a_word_the_chat_never_used_does_not_empty_the_result(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(engine, [("my sister's wedding in Borås", "Max")])
    found = await engine.recall(chat, "wedding zanzibar")
    assert hits(found) == [GUESS_AT]
    # Ranked with the messages holding every word the chat has, shown as partial: it names the
    # word it has, so the asker sees that "zanzibar" was not found.
    assert heads(found) == [f"Partial hit 1: message #{GUESS_AT} (has: wedding)"]


async def test_accents_are_folded_both_ways(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(
        engine, [("my sister's wedding in Borås", "Max"), ("the cafe on main street", "Lo")]
    )
    assert hits(await engine.recall(chat, "Boras")) == [GUESS_AT]
    assert hits(await engine.recall(chat, "borås")) == [GUESS_AT]
    assert hits(await engine.recall(chat, "café")) == [GUESS_AT + 1]


async def test_a_mention_matches_the_person_it_names(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(engine, [])
    mention = replace(message(GUESS_AT, "@Quincy are you coming saturday?", "Pia"), mention_ids=(9876,))
    await engine.append(chat, replace(mention, mention_names=("Quincy",)))
    await engine.append(chat, message(GUESS_AT + 1, "I'll be there", "Quincy"))
    found = await engine.recall(chat, "@Quincy", limit=5)
    assert set(hits(found)) == {GUESS_AT, GUESS_AT + 1}  # named in one, the author of the other


async def test_recall_after_an_erasure_finds_nothing_of_the_erased_person(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(
        engine,
        [
            ("my sister's wedding in Borås", "Max"),
            ("the wedding photos are up", "Pia"),
        ],
    )
    mention = replace(message(GUESS_AT + 2, "@Max congrats on the wedding", "Lo"), mention_ids=(MAX_ID,))
    await engine.append(chat, replace(mention, mention_names=("Max",)))
    before = await engine.recall(chat, "Max wedding", limit=10)
    assert set(hits(before)) == {GUESS_AT, GUESS_AT + 1, GUESS_AT + 2}
    await engine.erase_author(77, MAX_ID, ["Max"])
    after = await engine.recall(chat, "Max wedding", limit=10)
    # Pia's message stays (wedding); Max's own is gone and Lo's no longer names him.
    assert "Max" not in after and "Borås" not in after
    assert hits(after)[0] == GUESS_AT + 1 or hits(after)[0] == GUESS_AT + 2
    assert GUESS_AT not in hits(after)
    assert "No message" in await engine.recall(chat, "Max")
    assert "No message" in await engine.recall(chat, "Boras")
    async with sessions() as s:
        leftover = await s.scalar(
            text("SELECT count(*) FROM messages WHERE chat_id = :c AND tsv @@ to_tsquery('simple', 'max')"),
            {"c": chat},
        )
    assert leftover == 0


async def test_a_servers_language_setting_reindexes_its_chats(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(engine, [("the study groups meet on thursdays", "Pia")])
    assert hits(await engine.recall(chat, "group")) == [GUESS_AT]
    store = GuildSettingsStore(sessions)
    await store.set(77, search_language="swedish")
    assert await config_of(sessions, chat) == "eva_swedish"
    assert await configs_of_rows(sessions, chat) == {"eva_swedish": GUESS_AT + 1}
    await store.set(77, search_language=None)  # back to the guess
    assert await config_of(sessions, chat) == "eva_english"
    assert await configs_of_rows(sessions, chat) == {"eva_english": GUESS_AT + 1}
    assert hits(await engine.recall(chat, "group")) == [GUESS_AT]
