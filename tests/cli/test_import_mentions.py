"""A DiscordChatExporter import with mentions stores names, as live ingest does: DCE's default
export has already written "@name" (and lists who it mentions), an export made with
``--markdown false`` keeps Discord's raw tokens, which the import renders from the export's
own tables. Either way the mentioned people's ids are kept for erasure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.storage.models import Message
from tests.cli.test_memory_commands import cli_db, run  # noqa: F401  (cli_db is a fixture)

GUILD, GENERAL, PARENT = "849074769100935169", "849074769100935175", "849074769100935173"
MIRA, PAT, JONAS, MOD = "156124779118727816", "134104293048458587", "172406412935304060", "849437156966535171"


def user(ident: str, name: str, nickname: str, roles: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"id": ident, "name": name, "discriminator": "0000", "nickname": nickname, "isBot": False,
            "roles": roles or []}  # fmt: skip


def dce_message(ident: str, at: str, author: dict[str, Any], content: str, **extra: Any) -> dict[str, Any]:
    return {"id": ident, "type": "Default", "timestamp": at, "timestampEdited": None, "isPinned": False,
            "content": content, "author": author, "attachments": [], "embeds": [], "stickers": [],
            "reactions": [], "mentions": [], **extra}  # fmt: skip


MODERATOR = {"id": MOD, "name": "Moderator", "color": "#3498DB", "position": 4}
mira = user(MIRA, "mira.k", "mira ☕", [MODERATOR])
pat, jonas = user(PAT, "patpat", "patpat"), user(JONAS, "jonas_w", "Jonas")
DOCUMENT = {
    "guild": {"id": GUILD, "name": "Example Friends"},
    "channel": {"id": GENERAL, "type": "GuildTextChat", "categoryId": PARENT, "category": "Text Channels",
                "name": "general"},
    "messages": [
        # DCE's default (markdown on): the mention is already "@patpat".
        dce_message("1350167286513799169", "2025-03-14T18:02:46+00:00", mira,
                    "welcome @patpat! board game night is friday", mentions=[pat]),
        # --markdown false: raw tokens, named from the export's mentions, roles and channel.
        dce_message("1350167286513799170", "2025-03-14T18:03:46+00:00", mira,
                    f"<@{PAT}> bring <a:dice:1350167286513799999> to <#{GENERAL}>, <@&{MOD}> knows",
                    mentions=[pat]),
        # A reply pings the replied person (listed in mentions) without naming them.
        dce_message("1350167286513799171", "2025-03-14T18:04:46+00:00", pat, "thanks!!", type="Reply",
                    mentions=[mira], reference={"type": "Default", "messageId": "1350167286513799169"}),
        # Someone the export has no name for keeps the raw form, and is still a mention.
        dce_message("1350167286513799172", "2025-03-14T18:05:46+00:00", jonas, "<@999000999000999000> who?"),
    ],
    "messageCount": 4,
}  # fmt: skip


async def test_a_dce_import_with_mentions_stores_names(
    tmp_path: Path,
    cli_db: str,  # noqa: F811  (the fixture imported above)
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    export = tmp_path / "general.json"
    export.write_text(json.dumps(DOCUMENT, ensure_ascii=False, indent=2), encoding="utf-8")
    done = run(tmp_path, cli_db, "import", str(export), "--chat", "friends")
    assert done.returncode == 0, done.stderr
    async with sessions() as s:
        rows = list((await s.scalars(select(Message).order_by(Message.idx))).all())
    assert [r.text for r in rows] == [
        "welcome @patpat! board game night is friday",
        "@patpat bring :dice: to #general, @Moderator knows",
        "thanks!! (reply to #0)",
        "<@999000999000999000> who?",
    ]
    assert [r.mention_ids for r in rows] == [[int(PAT)], [int(PAT)], None, [999000999000999000]]
    assert [r.mention_names for r in rows] == [["patpat"], ["patpat"], None, [""]]
