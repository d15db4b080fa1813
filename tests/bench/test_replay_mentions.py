"""The replay benchmark is unchanged by mention rendering on the IRC corpora: they hold no
Discord mention tokens, so every message `eva import` and bench/replay.py log from them is
the text of the corpus, with no mentioned ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.imports.readers import read_any
from memory.storage.log import from_import

CORPORA = ("mediawiki.jsonl", "rust.dce.json", "rust.jsonl", "stripe.jsonl", "ubuntu-meeting.jsonl",
           "ubuntu-stream-1.jsonl")  # fmt: skip


@pytest.mark.parametrize("corpus", CORPORA)
def test_irc_corpora_are_logged_word_for_word(shared_data: Path, corpus: str) -> None:
    path = shared_data / "irc" / corpus
    if not path.is_file():
        pytest.skip(f"{corpus} is not in the shared data")
    count = 0
    for record in read_any(path):
        new = from_import(record, None)
        assert new.content == record.content, f"message {count} of {corpus} changed"
        assert new.mention_ids == () and new.mention_names == ()
        count += 1
    assert count > 3000  # the corpus was really read
