"""Erasure leaves no trace: plant a canary in every message of one
author, build the memory, erase that author, and search every column of every table."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.storage.models import MemoryRow, Message, TreeNode
from memory.tree.render import tail_line
from memory.tree.row import is_tiling
from tests.memory.helpers import fill, make_engine, message, new_chat, settle

Sessions = async_sessionmaker[AsyncSession]
CANARY = "zebracanary"
VICTIM = "Max"
VICTIM_ID = 918273645546  # distinctive: a search for it cannot hit snowflakes or counts


async def table_dump(sessions: Sessions) -> str:
    """Every row of every table of ours as text (what a canary search must not find)."""
    out = []
    async with sessions() as s:
        tables = (
            (await s.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")))
            .scalars()
            .all()
        )
        for table in tables:
            rows = (await s.execute(text(f'SELECT t::text FROM "{table}" t'))).scalars().all()
            out.extend(rows)
    return "\n".join(out)


async def test_erasing_an_author_leaves_no_trace_and_rebuilds_from_the_rest(sessions: Sessions) -> None:
    engine, summarizer, clock = make_engine(sessions)
    chat = await new_chat(engine)
    msgs = []
    for k in range(90):
        m = message(k)
        if m.author_name == VICTIM:
            m = replace(
                message(k, f"{CANARY} says {k}: " + "long words " * (60 if k % 2 else 2)), author_id=VICTIM_ID
            )
        msgs.append(m)
    await fill(engine, clock, chat, msgs, compact_every=4)
    await settle(engine, clock, chat)
    before = await table_dump(sessions)
    assert CANARY in before and str(VICTIM_ID) in before
    assert summarizer.calls > 0, "some of the victim's lines went through the model"

    report = await engine.erase_author(77, VICTIM_ID)
    assert report.messages == 30 and report.nodes > 0

    after = await table_dump(sessions)
    assert CANARY not in after
    assert str(VICTIM_ID) not in after
    assert VICTIM not in after  # the display name is gone from every row and line
    async with sessions() as s:
        state = await s.get(MemoryRow, chat)
        assert state is not None
        parts = [(a, b) for a, b in state.shown]
        assert is_tiling(parts, state.boundary)
    rendered = (await engine.prompt_view(chat)).render()
    assert CANARY not in rendered

    await engine.compact(chat, until_idle=True)
    async with sessions() as s:
        rebuilt = (
            (await s.execute(text("SELECT text FROM nodes WHERE chat_id = :c AND level > 0"), {"c": chat}))
            .scalars()
            .all()
        )
        state = await s.get(MemoryRow, chat)
        assert state is not None and not state.needs_repair
        shown_built = (
            await s.execute(
                text(
                    "SELECT count(*) FROM nodes n JOIN jsonb_array_elements(:parts) p "
                    "ON n.level = (p->>0)::int AND n.idx = (p->>1)::bigint WHERE n.chat_id = :c"
                ),
                {"parts": __import__("json").dumps(state.shown), "c": chat},
            )
        ).scalar()
    assert shown_built == len(state.shown), "the row shows only built lines again"
    assert rebuilt and all(CANARY not in line and VICTIM not in line for line in rebuilt)
    assert CANARY not in await table_dump(sessions)
    # Other people's words are still there, whole.
    assert "from Pia" in (await engine.zoom(chat, 0, 1))


async def test_erasing_messages_by_snowflake_keeps_slots(sessions: Sessions) -> None:
    engine, _, clock = make_engine(sessions)
    chat = await new_chat(engine)
    await fill(engine, clock, chat, [message(k) for k in range(40)])
    await settle(engine, clock, chat)
    report = await engine.erase_messages(chat, [10_003, 10_004, 99_999])
    assert report.messages == 2
    assert await engine.message_count(chat) == 40
    assert "(erased)" in await engine.zoom(chat, 3, 1)
    async with sessions() as s:
        leaf = await s.get(TreeNode, (chat, 0, 3))
        assert leaf is not None and leaf.text == ""


async def test_wipe_and_forget_chat(sessions: Sessions) -> None:
    engine, _, clock = make_engine(sessions)
    chat = await new_chat(engine)
    other = await new_chat(engine, "random", discord_id=556)
    await fill(engine, clock, chat, [message(k) for k in range(20)])
    await engine.append(other, message(500, f"{CANARY} elsewhere"))
    await engine.wipe_chat(chat)
    assert await engine.message_count(chat) == 0
    assert (await engine.prompt_view(chat)).render() == "<memory>\n</memory>\n"
    assert CANARY in await table_dump(sessions)  # the other channel keeps its memory
    await engine.forget_discord_chat(556)
    assert CANARY not in await table_dump(sessions)
    assert await engine.chat_by_discord_id(556) is None


async def test_an_erased_slot_counts_the_bytes_of_its_line(sessions: Sessions) -> None:
    # The tail's byte budget sums line_bytes: an erased slot must count its "(erased)" line.
    engine, _, clock = make_engine(sessions)
    chat = await new_chat(engine)
    await fill(engine, clock, chat, [message(k) for k in range(120)], compact_every=1000)
    await engine.erase_messages(chat, [10_007, 10_099])
    async with sessions() as s:
        for index in (7, 99):
            m = await s.get(Message, (chat, index))
            assert m is not None and m.text is None
            shown = tail_line(m.idx, m.created_at, m.author_name, m.text, "UTC")
            assert "(erased)" in shown
            assert m.line_bytes == len(shown.encode()) + 1  # and its newline
