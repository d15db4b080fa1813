"""The real `eva run` against the whole-process Discord fake and the Anthropic fake: a trigger
with an attached image sends one image block (the file itself, fetched from the fake CDN), and
the database keeps only the file's name."""

from __future__ import annotations

import base64
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.fakes.discord_world import UploadedFile
from tests.worlds.eva_process import ProcessWorld, eventually, logged_message

PHOTO = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40  # a PNG signature and 10 KB after it


async def test_eva_run_sends_an_attached_image_as_one_image_block(
    processes: ProcessWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    discord_fake, anthropic_fake, ids = processes.discord, processes.anthropic, processes.discord.ids
    eva = await processes.run()
    asked = discord_fake.chat.post_user_message(
        ids.general,
        ids.alice,
        f"<@{ids.bot}> what do you think of my cat?",
        attachments=[UploadedFile("cat.jpeg", PHOTO, "image/jpeg")],  # Discord's guess, from the name
    )

    async def reply_request() -> Any:
        return next(iter(anthropic_fake.requests("reply")), None)

    request = await eventually(reply_request, within=15)
    images = [b for m in request.body["messages"] for b in m["content"] if b["type"] == "image"]
    assert len(images) == 1
    assert images[0]["source"]["media_type"] == "image/png"  # from the bytes
    assert base64.b64decode(images[0]["source"]["data"]) == PHOTO
    assert request.status == 200

    row = await eventually(lambda: logged_message(sessions, int(asked["id"])))
    assert row.attachments == ["file:cat.jpeg"] and "PNG" not in (row.text or "")
    assert await eva.terminate() == 0
    assert not any("Traceback" in line for line in eva.raw)
