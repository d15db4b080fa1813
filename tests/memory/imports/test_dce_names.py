"""The names a DiscordChatExporter export gives the ids in a message (memory/imports/dce_names.py):
read leniently, since a broken mention entry does not make the message itself unreadable."""

from __future__ import annotations

import json
from pathlib import Path

from memory.imports.dce_names import channel_names, mentioned_people, role_names
from memory.imports.readers import read_dce
from memory.storage.log import from_import


def test_mentions_roles_and_channels_are_read_leniently() -> None:
    message = {
        "mentions": [
            {"id": "134104293048458587", "name": "patpat", "nickname": "Pat", "roles": [
                {"id": "849437156966535171", "name": "Moderator"}, {"id": "x", "name": "bad"}, "junk"]},
            {"id": "156124779118727816", "name": "mira.k"},  # an export older than 2.25: no nickname
            {"id": 42, "name": "not a string id"},
            {"id": "99999999999999999999", "name": "past bigint"},
            "junk",
        ]
    }  # fmt: skip
    people, users = mentioned_people(message)
    assert people == ((134104293048458587, "Pat"), (156124779118727816, "mira.k"))
    assert role_names(users) == ((849437156966535171, "Moderator"),)
    assert mentioned_people({"mentions": "nope"}) == ((), [])
    assert mentioned_people({}) == ((), [])
    thread = {"channel": {"id": "2", "name": "plans", "categoryId": "1", "category": "general"}}
    assert channel_names(thread) == ((2, "plans"), (1, "general"))
    assert channel_names({"channel": None}) == ()


def test_a_broken_mention_list_does_not_stop_an_import(tmp_path: Path) -> None:
    export = tmp_path / "x.json"
    message = {"id": "1350167286513799169", "type": "Default", "timestamp": "2025-03-14T18:02:46+00:00",
               "content": "<@134104293048458587> hi", "author": {"id": "156124779118727816", "name": "mira"},
               "mentions": [{"name": "no id"}, 7]}  # fmt: skip
    export.write_text(json.dumps({"guild": {}, "channel": {}, "messages": [message]}), encoding="utf-8")
    (record,) = list(read_dce(export))
    new = from_import(record, None)
    assert new.content == "<@134104293048458587> hi"  # nobody named it: the raw form stays
    assert new.mention_ids == (134104293048458587,)
