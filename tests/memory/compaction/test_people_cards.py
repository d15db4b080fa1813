"""People cards (docs/design.md, people cards): the pure rules of their input and output, and
the engine with the fake summarizer: built at the quiet swap only, shown before the row, gone
with an erasure or edit of what they were built from, never for or naming someone who opted out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.compaction.card_prompts import CARD_BYTES, fit_card, lines_naming, parse_cards
from memory.compaction.cards import CardPlan, kept_cards
from memory.compaction.summarizer import CardBatch, CardTask
from memory.engine import MemoryEngine
from memory.fakes.summarizer import FakeSummarizer
from memory.storage.log import ChatKey, NewMessage
from memory.storage.models import MemoryRow, PersonCard
from memory.storage.people_cards import active_people
from tests.memory.helpers import SMALL, START, make_engine

GUILD = 77
IDS = {"Pia": 1, "Max": 2, "Lo": 3, "Ida": 4}


def said(k: int, who: str, words: str, minutes: float | None = None) -> NewMessage:
    return NewMessage(
        author_name=who,
        author_id=IDS[who],
        created_at=START + timedelta(minutes=k if minutes is None else minutes),
        content=words,
        snowflake=50_000 + k,
    )


def talk(count: int, people: Sequence[str] = ("Pia", "Max", "Lo"), start: int = 0) -> list[NewMessage]:
    """Long enough messages that every one needs the model (no free leaf): each person talks
    about themselves and names the next one."""
    out = []
    for k in range(start, start + count):
        who, other = people[k % len(people)], people[(k + 1) % len(people)]
        out.append(
            said(k, who, f"{who} here, I am training for the marathon number {k} and {other} joins me " * 3)
        )
    return out


async def chat_with(engine: MemoryEngine, messages: Sequence[NewMessage]) -> int:
    chat: int = await engine.ensure_chat(ChatKey("text", "general", discord_id=555, guild_id=GUILD))
    await engine.append_many(chat, list(messages))
    return chat


async def cards(sessions: async_sessionmaker[AsyncSession], chat: int) -> dict[int, str]:
    async with sessions() as s:
        rows = (await s.scalars(select(PersonCard).where(PersonCard.chat_id == chat))).all()
        return {row.person_id: row.text for row in rows}


async def due(sessions: async_sessionmaker[AsyncSession], chat: int) -> bool:
    async with sessions() as s:
        return bool(await s.scalar(select(MemoryRow.cards_due).where(MemoryRow.chat_id == chat)))


# --- pure rules ------------------------------------------------------------------------------


def test_a_persons_input_is_the_newest_lines_naming_them_without_an_opted_out_name() -> None:
    lines = ["Pia booked the court", "Max: no", "pia and Lo went", "Olopia said hi", "Pia met Lo"]
    assert lines_naming(lines, ["Pia"]) == ("Pia booked the court", "pia and Lo went", "Pia met Lo")
    assert lines_naming(lines, ["Pia"], forbidden=["Lo"]) == ("Pia booked the court",)
    assert lines_naming(lines, ["Pia"], budget=len("Pia met Lo") + 1) == ("Pia met Lo",)
    assert lines_naming(lines, []) == ()


def test_cards_are_cut_to_the_budget_at_a_word_and_read_from_the_out_form() -> None:
    long = "Pia runs " * 60
    fitted = fit_card(long)
    assert len(fitted.encode()) <= CARD_BYTES and fitted.endswith("runs")
    assert parse_cards('<out n="2">Max: bikes</out><out n="1">Pia: runs</out>', 2) == [
        "Pia: runs",
        "Max: bikes",
    ]
    assert parse_cards('<out n="1">Pia</out>', 2) == ["Pia", None]


def test_a_card_naming_someone_who_opted_out_is_not_kept() -> None:
    plan = CardPlan(
        version=1, tasks=[CardTask(1, "Pia", ("x",)), CardTask(2, "Max", ("y",))], forbidden={"Lo"}
    )
    kept = kept_cards(plan, ["Pia runs with lo on sundays", "Max bikes to Lofoten"])
    assert [card.person_id for card in kept] == [2]  # "Lofoten" is not the name "Lo"


# --- the engine ------------------------------------------------------------------------------


async def test_cards_are_built_at_the_quiet_swap_and_shown_before_the_row(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine, fake, clock = make_engine(sessions)
    chat = await chat_with(engine, talk(16))  # past TAIL_START, under TAIL_FORCE
    clock.set(START + timedelta(minutes=16))
    await engine.compact(chat, until_idle=True)  # busy: lines are built but no swap, no cards
    assert fake.card_calls == 0 and await cards(sessions, chat) == {}
    clock.advance(engine.config.quiet_seconds + 1)
    await engine.compact(chat, until_idle=True)  # quiet: the swap, then the cards
    assert fake.card_calls == 1
    built = await cards(sessions, chat)
    assert set(built) == {IDS["Pia"], IDS["Max"], IDS["Lo"]}
    assert all(0 < len(card.encode()) <= CARD_BYTES for card in built.values())
    view = await engine.prompt_view(chat)
    rendered = view.render()
    assert rendered.startswith("<people>\n") and rendered.index("</people>") < rendered.index("<memory>")
    assert [line.split(":")[0] for line in view.people_lines] == ["Pia", "Max", "Lo"]  # most active first
    assert await engine.people_cards(chat) == view.people_lines
    # Nothing new: no second call on later passes.
    clock.advance(engine.config.quiet_seconds + 1)
    await engine.compact(chat, until_idle=True)
    assert fake.card_calls == 1


async def test_a_forced_swap_leaves_the_cards_for_the_next_quiet_swap(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine, fake, clock = make_engine(sessions)
    chat = await chat_with(engine, talk(60))  # past TAIL_FORCE: the swap does not wait
    clock.set(START + timedelta(minutes=60))
    report = await engine.compact(chat, until_idle=True)
    assert report.forced_swaps >= 1
    assert fake.card_calls == 0 and not await due(sessions, chat)
    clock.advance(engine.config.quiet_seconds + 1)
    await engine.compact(chat, until_idle=True)  # quiet, but no swap: the cards stay as they were
    assert fake.card_calls == 0 and await cards(sessions, chat) == {}
    await engine.append_many(chat, talk(20, start=60))
    clock.advance(engine.config.quiet_seconds + 60)
    report = await engine.compact(chat, until_idle=True)  # a quiet swap: its cards follow at once
    assert report.swaps >= 1 and report.forced_swaps == 0
    assert fake.card_calls == 1 and not await due(sessions, chat) and await cards(sessions, chat)


async def test_only_the_most_active_who_did_not_opt_out_are_counted(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine, _, _ = make_engine(sessions)
    chat = await chat_with(engine, talk(12, people=("Pia", "Max", "Lo", "Pia")))
    async with sessions() as s:
        everyone = await active_people(s, chat, 12, START - timedelta(days=1), 10, [])
        without_lo = await active_people(s, chat, 12, START - timedelta(days=1), 10, [IDS["Lo"]])
        top = await active_people(s, chat, 12, START - timedelta(days=1), 1, [])
    assert [(p.person_id, p.messages) for p in everyone] == [(IDS["Pia"], 6), (IDS["Max"], 3), (IDS["Lo"], 3)]
    assert [p.person_id for p in without_lo] == [IDS["Pia"], IDS["Max"]]
    assert [p.person_id for p in top] == [IDS["Pia"]] and top[0].names == ("Pia",)


async def test_the_people_are_the_most_active_of_the_window(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    config = replace(SMALL, people_cards=2, people_days=1)
    engine, _, clock = make_engine(sessions, config)
    # Ida wrote most, but two days before the others: outside the one-day window.
    old = [
        said(k, "Ida", f"Ida says hello to Pia and Max, day one, number {k} " * 4, minutes=k)
        for k in range(20)
    ]
    recent = talk(30, start=20)
    recent = [replace(m, created_at=m.created_at + timedelta(days=2)) for m in recent]
    chat = await chat_with(engine, old + recent)
    clock.set(recent[-1].created_at + timedelta(seconds=engine.config.quiet_seconds + 1))
    await engine.compact(chat, until_idle=True)
    assert set(await cards(sessions, chat)) == {IDS["Pia"], IDS["Max"]}  # a three-way tie: by id, Lo is cut


async def test_an_opted_out_person_gets_no_card_and_is_in_no_cards_input(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine, fake, clock = make_engine(sessions)
    chat = await chat_with(engine, talk(30))
    await engine.opt_out(GUILD, IDS["Lo"])  # logged before they opted out: their name is in the lines
    inputs: list[CardTask] = []
    write = fake.write_cards

    async def spy(tasks: Sequence[CardTask]) -> CardBatch:
        inputs.extend(tasks)
        return await write(tasks)

    fake.write_cards = spy  # type: ignore[method-assign]
    clock.set(START + timedelta(minutes=30, seconds=engine.config.quiet_seconds + 1))
    await engine.compact(chat, until_idle=True)
    built = await cards(sessions, chat)
    assert set(built) == {IDS["Pia"], IDS["Max"]}
    assert inputs and all(t.person_id != IDS["Lo"] for t in inputs)
    assert not [line for t in inputs for line in t.lines if " Lo " in f" {line} "]
    assert not [card for card in built.values() if " Lo " in f" {card} "]


async def test_an_erased_persons_own_card_goes_even_when_no_line_of_theirs_changed(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine, _, clock = make_engine(sessions)
    # Max talks about Pia for a while (his words, in the lines); Pia writes a few messages that
    # stay in the raw tail. Her card is built from Max's lines that name her.
    max_says = [
        said(k, "Max", f"Max here: Pia told me she is moving to Oslo, note {k} " * 3) for k in range(40)
    ]
    pia_says = [said(40 + k, "Pia", f"hi all {k}") for k in range(3)]
    chat = await chat_with(engine, max_says + pia_says)
    clock.set(START + timedelta(minutes=43, seconds=engine.config.quiet_seconds + 1))
    await engine.compact(chat, until_idle=True)
    assert IDS["Pia"] in await cards(sessions, chat)
    async with sessions() as s:
        tail = await s.scalar(select(MemoryRow.boundary).where(MemoryRow.chat_id == chat))
    assert tail is not None and tail <= 40, "her messages are in the raw tail, under no line"
    report = await engine.erase_author(GUILD, IDS["Pia"])
    assert report.messages == 3 and report.nodes == 0
    assert IDS["Pia"] not in await cards(sessions, chat)


async def test_an_edit_of_words_a_card_holds_drops_the_cards_until_they_are_rebuilt(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine, _, clock = make_engine(sessions)
    messages = talk(30)
    messages[0] = said(0, "Pia", "Pia here, my secret word is plumcanary and I train daily " * 3)
    chat = await chat_with(engine, messages)
    clock.set(START + timedelta(minutes=30, seconds=engine.config.quiet_seconds + 1))
    await engine.compact(chat, until_idle=True)
    assert any("plumcanary" in card for card in (await cards(sessions, chat)).values())
    await engine.edit(chat, 50_000, "Pia here, nothing to see " * 3)
    assert await cards(sessions, chat) == {} and await due(sessions, chat)
    await engine.append(chat, said(99, "Max", "back again", minutes=31 + engine.config.quiet_seconds / 60))
    await engine.compact(chat, until_idle=True)  # the lines are rebuilt, but people talk: no cards yet
    assert await cards(sessions, chat) == {} and await due(sessions, chat)
    clock.advance(engine.config.quiet_seconds + 60)
    await engine.compact(chat, until_idle=True)
    rebuilt = await cards(sessions, chat)
    assert rebuilt and not any("plumcanary" in card for card in rebuilt.values())
    async with sessions() as s:
        assert not (
            await s.scalars(text("SELECT text FROM people_cards WHERE text LIKE '%plumcanary%'"))
        ).all()


async def test_a_card_call_that_an_erasure_overtakes_is_thrown_away(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    engine, fake, clock = make_engine(sessions)
    chat = await chat_with(engine, talk(30))
    write = fake.write_cards

    async def erase_meanwhile(tasks: Sequence[CardTask]) -> CardBatch:
        batch = await write(tasks)
        await engine.erase_author(GUILD, IDS["Lo"])  # commits while the call is "out"
        return batch

    fake.write_cards = erase_meanwhile  # type: ignore[method-assign]
    clock.set(START + timedelta(minutes=30, seconds=engine.config.quiet_seconds + 1))
    report = await engine.compact(chat)
    assert report.card_calls == 1 and report.cards == 0 and report.discarded >= 3
    assert await cards(sessions, chat) == {} and await due(sessions, chat)
    fake.write_cards = write  # type: ignore[method-assign]
    await engine.compact(chat, until_idle=True)
    rebuilt = await cards(sessions, chat)
    assert set(rebuilt) == {IDS["Pia"], IDS["Max"]}
    assert not [card for card in rebuilt.values() if " Lo " in f" {card} "]


async def test_the_fake_card_is_made_of_the_lines_words_only() -> None:
    fake = FakeSummarizer()
    task = CardTask(1, "Pia", ("Pia runs daily", "Max said Pia moved"))
    batch = await fake.write_cards([task])
    (card,) = batch.cards
    assert card is not None and set(card.split()) <= set(" ".join(task.lines).split())
    assert batch.usage.calls == 1 and batch.usage.input_tokens > 0 and fake.card_calls == 1
