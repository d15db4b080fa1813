"""Recall's search: newest matches first in widening windows, full-text before trigrams."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.reading import search
from memory.reading.search import FIRST_WINDOW, RECALL_CANDIDATES, tsquery_literal, windows
from tests.memory.helpers import make_engine, message, new_chat

Sessions = async_sessionmaker[AsyncSession]


def test_windows_cover_the_chat_once_newest_first_and_widen() -> None:
    got = list(windows(1_000_000, 4096, 4))
    # Sizes by hand: 4,096, then x4 each, until the chat's first message.
    sizes = [hi - lo for lo, hi in got]
    assert sizes[:4] == [4096, 16384, 65536, 262144]
    assert sizes[4] == 1_000_000 - 4096 - 16384 - 65536 - 262144
    assert got[0] == (1_000_000 - 4096, 1_000_000) and got[-1][0] == 0
    assert all(a[0] == b[1] for a, b in itertools.pairwise(got))  # adjacent, no overlap
    assert list(windows(10, 4096, 4)) == [(0, 10)]
    assert list(windows(0, 4096, 4)) == []
    assert list(windows(9000, 9000, 4)) == [(0, 9000)]


async def test_tsquery_literal_reads_back_as_the_same_lexeme(sessions: Sessions) -> None:
    async with sessions() as s:
        for lexeme in ("apt-get", "it's", "back\\slash", "o''k", "ünïcode", "a:b&c|d!e"):
            parsed = await s.scalar(
                text("SELECT tsvector_to_array(CAST(:lexeme AS tsquery)::text::tsvector)"),
                {"lexeme": tsquery_literal(lexeme)},
            )
            assert parsed == [lexeme], lexeme


async def test_a_common_word_returns_the_newest_hits_first(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await new_chat(engine)
    total = FIRST_WINDOW + 2000  # more than one window
    # The oldest half says just "common" (the best score a match can have); the newer half
    # says it among other words. Ranking every match would return old messages.
    texts = ["common" if k < total // 2 else "a common word in a longer message" for k in range(total)]
    await engine.append_many(chat, [message(k, texts[k]) for k in range(total)])
    found = await engine.recall(chat, "common", limit=5)
    hits = [int(line.split("#")[1].split(" ")[0]) for line in found.splitlines() if line.startswith("Hit")]
    newest = [k for k in range(total) if "common" in texts[k]][-RECALL_CANDIDATES:]
    assert hits and all(k in newest for k in hits), hits
    # The newest all say the same, so they score the same: newer first.
    assert hits == newest[::-1][:5]


async def test_a_rare_word_is_found_in_every_window(sessions: Sessions) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await new_chat(engine)
    total = FIRST_WINDOW * 6  # windows: the newest 4,096, the 16,384 before, then the rest
    rare = {3, FIRST_WINDOW * 6 - 20_000, total - 5}  # one in each window
    await engine.append_many(
        chat, [message(k, "zyzzyva here" if k in rare else f"filler {k}") for k in range(total)]
    )
    found = await engine.recall(chat, "zyzzyva", limit=5)
    assert {
        int(line.split("#")[1].split(" ")[0]) for line in found.splitlines() if line.startswith("Hit")
    } == rare


async def test_every_word_of_the_query_must_match_in_a_window(sessions: Sessions) -> None:
    # Inside a window the index looks for the longest word only ("saturday"); the rest of the
    # query must still be checked on what it finds.
    engine, _, _ = make_engine(sessions)
    chat = await new_chat(engine)
    total = FIRST_WINDOW + 100
    texts = {total - 1: "saturday brunch", total - 2: "padel on saturday", 10: "padel saturday again"}
    await engine.append_many(chat, [message(k, texts.get(k, f"filler {k}")) for k in range(total)])
    found = await engine.recall(chat, "padel saturday", limit=5)
    hits = {int(line.split("#")[1].split(" ")[0]) for line in found.splitlines() if line.startswith("Hit")}
    assert hits == {total - 2, 10}


async def test_every_window_stays_inside_its_chat(sessions: Sessions) -> None:
    # Two chats past one window: the newest window is searched by index range and the oldest
    # through the chat-led index; neither may reach the other chat's messages.
    engine, _, _ = make_engine(sessions)
    mine = await new_chat(engine, "mine", discord_id=1)
    theirs = await new_chat(engine, "theirs", discord_id=2)
    total = FIRST_WINDOW + 50
    await engine.append_many(
        theirs, [message(k, "papaya secret" if k < 5 or k >= total - 20 else f"x {k}") for k in range(total)]
    )
    await engine.append_many(mine, [message(k, f"nothing here {k}") for k in range(total)])
    assert (await engine.recall(mine, "papaya")).startswith("No message")
    assert (await engine.recall(mine, "papaya secret")).startswith("No message")
    found = await engine.recall(theirs, "papaya", limit=20)
    assert found.count("Hit ") == 20


async def test_a_small_chat_beside_a_big_one_finds_the_same_through_its_own_index(
    sessions: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A chat under 1/40 of the table is read through the chat-led index from its first message
    # in one statement; the windows over the primary key must find and rank exactly the same.
    engine, _, _ = make_engine(sessions)
    big = await new_chat(engine, "big", discord_id=11)
    small = await new_chat(engine, "small", discord_id=12)
    words = ["apple pie tonight", "apple juice", "pears and apples", "the weather", "padel at nine"]
    await engine.append_many(big, [message(k, f"{words[k % 5]} {k}") for k in range(4_000)])
    await engine.append_many(small, [message(k, f"{words[(k * 3) % 5]} number {k}") for k in range(80)])
    async with sessions() as s:
        await s.execute(text("ANALYZE messages"))
        await s.commit()
    seen: list[bool] = []
    original = search._candidates

    async def spied(*args: Any, **kwargs: Any) -> Any:
        seen.append(bool(args[-1]))
        return await original(*args, **kwargs)

    monkeypatch.setattr(search, "_candidates", spied)
    queries = ["apple pie", "apples juice tonight", "padel weather pears", "number 7"]
    own_index = [await engine.recall(small, q, limit=10) for q in queries]
    assert seen == [True] * len(queries)
    monkeypatch.setattr(search, "CHAT_LED_RATIO", 0)  # windows over the primary key, as a big chat's
    windowed = [await engine.recall(small, q, limit=10) for q in queries]
    assert seen[len(queries) :] == [False] * len(queries)
    assert own_index == windowed
    for found in own_index:
        assert sum(line.startswith(("Hit ", "Partial hit ")) for line in found.splitlines()) >= 3
    assert not (await engine.recall(big, "apple pie", limit=5)).startswith("No message")
    assert seen[-1] is False  # the big chat keeps its windows
