"""The compaction-speed benchmark's corpus: more messages than the stream holds are made by
repeating it, each copy moved past the one before, so that `eva import` takes them as one
history (ids unique, dates in order)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.compact_speed import write_corpus


def test_a_repeated_corpus_keeps_ids_unique_and_dates_in_order(tmp_path: Path) -> None:
    source = tmp_path / "small.jsonl"
    records = [
        {"i": 0, "author": "ann", "text": "hi", "date": "2020-01-01T10:00:00Z"},
        {"i": 1, "author": "bob", "text": "hey", "date": "2020-01-03T09:00:00Z", "reply_to": [0]},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out.jsonl"
    assert write_corpus(source, 5, out) == 5
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["i"] for r in written] == [0, 1, 2, 3, 4]
    # The stream spans 1 day 23 h; each copy moves on by that plus a day.
    assert [r["date"] for r in written] == [
        "2020-01-01T10:00:00Z", "2020-01-03T09:00:00Z",
        "2020-01-04T09:00:00Z", "2020-01-06T08:00:00Z",
        "2020-01-07T08:00:00Z",
    ]  # fmt: skip
    assert written[3]["reply_to"] == [2] and written[1]["reply_to"] == [0]
    assert [r["text"] for r in written] == ["hi", "hey", "hi", "hey", "hi"]
