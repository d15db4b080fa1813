"""Splitting replies into Discord messages (pure)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.reply.splitting import CUT_NOTE, DISCORD_LIMIT, MAX_CHUNKS, split_message, units


def fences_balanced(chunk: str) -> bool:
    return sum(1 for line in chunk.split("\n") if line.lstrip().startswith("```")) % 2 == 0


def test_a_short_reply_is_one_message() -> None:
    assert split_message("  hello there \n") == ["hello there"]
    assert split_message("") == [] and split_message(" \n ") == []


def test_paragraphs_stay_whole() -> None:
    paragraphs = [f"paragraph {k}: " + " ".join(["lorem ipsum"] * 60) for k in range(6)]  # ~730 chars each
    chunks = split_message("\n\n".join(paragraphs))
    assert all(len(c) <= DISCORD_LIMIT for c in chunks)
    # Two paragraphs fit in each message, never two and a half.
    assert [c.split("\n\n") for c in chunks] == [
        [p.strip() for p in paragraphs[k : k + 2]] for k in (0, 2, 4)
    ]


def test_lines_then_words_then_anything() -> None:
    lines = "\n".join(f"line {k} " + "ab " * 20 for k in range(80))
    for chunk in split_message(lines):
        assert len(chunk) <= DISCORD_LIMIT and chunk.startswith("line ") and chunk.endswith("ab")
    words = " ".join(f"word{k}" for k in range(700))
    chunks = split_message(words)
    assert " ".join(chunks).split() == words.split()  # no word was cut in two
    blob = "x" * 4500
    chunks = split_message(blob)
    assert "".join(chunks) == blob and [len(c) for c in chunks] == [1996, 1996, 508]


def test_code_fences_are_closed_and_reopened() -> None:
    code = "```python\n" + "\n".join(f"print({k})  # a line of code" for k in range(150)) + "\n```\nthat's it"
    chunks = split_message("Here you go:\n\n" + code)
    assert len(chunks) == 3 and all(len(c) <= DISCORD_LIMIT and fences_balanced(c) for c in chunks)
    assert chunks[0].endswith("\n```") and chunks[1].startswith("```python\nprint(")
    assert chunks[-1].endswith("```\nthat's it")
    rebuilt = "\n".join(chunks).replace("\n```\n```python\n", "\n")
    assert rebuilt == "Here you go:\n\n" + code


def test_a_runaway_reply_is_capped_with_a_note() -> None:
    chunks = split_message("blah " * 5000)  # 25,000 characters
    assert len(chunks) == MAX_CHUNKS and chunks[-1].endswith(CUT_NOTE)
    assert all(len(c) <= DISCORD_LIMIT for c in chunks)


def test_emoji_count_twice() -> None:
    chunks = split_message("😀" * 1500)  # 3,000 UTF-16 code units
    assert [units(c) for c in chunks] == [1996, 1004] and "".join(chunks) == "😀" * 1500


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(
                alphabet=st.characters(blacklist_characters="`\r", blacklist_categories=["Cs"]), max_size=40
            ),
            st.sampled_from(["\n", "\n\n", "```py\n", "\n```\n", " "]),
        ),
        max_size=400,
    )
)
def test_every_chunk_fits_and_renders_alone(parts: list[str]) -> None:
    text = "".join(parts)
    chunks = split_message(text, limit=300, max_chunks=50)
    assert all(0 < units(c) <= 300 for c in chunks) and len(chunks) <= 50
    if sum(1 for line in text.split("\n") if line.lstrip().startswith("```")) % 2 == 0:
        assert all(fences_balanced(c) for c in chunks)
    if "`" not in text and not (chunks and chunks[-1].endswith(CUT_NOTE)):
        assert "".join(text.split()) == "".join("".join(chunks).split())  # nothing lost
