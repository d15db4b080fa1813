"""/memory ...: admin-only (and checked at run time), channel option rules, and each command."""

from __future__ import annotations

from datetime import timedelta

import pytest
import simcord
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.tree import NEED_MANAGE_SERVER
from memory.errors import UserFacingError
from memory.storage.log import NewMessage
from memory.storage.models import TreeNode
from tests.worlds.commands_world import START, World, causes, counts, reply_text

SUBCOMMANDS = {f"memory {name}" for name in ("status", "view", "node", "compact", "pause", "resume", "wipe")}


async def test_memory_is_hidden_from_members_and_refused_even_when_an_admin_allows_them(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    assert set(world.admin.available_commands(world.general)) >= SUBCOMMANDS
    visible = set(world.alice.available_commands(world.general))
    assert {"zoom", "recall", "forget-me", "remember-me"} <= visible and not visible & SUBCOMMANDS
    with pytest.raises(simcord.SetupError, match="not visible"):
        await world.alice.slash(world.general, "memory pause")
    # A server admin overrides the default permission for alice (Server Settings > Integrations).
    world.guild.set_command_permissions(world.command("memory"), {world.alice: True})
    assert set(world.alice.available_commands(world.general)) >= SUBCOMMANDS
    before = await counts(sessions)
    for sub in ("pause", "wipe", "status"):
        assert reply_text(await world.alice.slash(world.general, f"memory {sub}")) == NEED_MANAGE_SERVER
    assert await counts(sessions) == before
    assert len(world.env.errors) == 3
    assert await world.alice.autocomplete(world.general, "memory node", "address", "") == []


async def test_channel_option_the_bot_cannot_read_or_without_memory(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    before = await counts(sessions)
    hidden = reply_text(await world.admin.slash(world.general, "memory pause", channel=world.hidden))
    assert hidden == (
        f"I cannot read <#{world.hidden.id}> (I need View Channel and Read Message History there),"
        " so I have no memory of it."
    )
    empty = reply_text(await world.admin.slash(world.general, "memory status", channel=world.empty))
    assert empty == f"I have no memory of <#{world.empty.id}> yet."
    here = reply_text(await world.admin.slash(world.empty, "memory view"))
    assert here == f"I have no memory of <#{world.empty.id}> yet."
    assert [type(e) for e in causes(world.env.errors)] == [UserFacingError] * 3
    assert await counts(sessions) == before


async def test_status_reports_the_channel_asked_for(world: World) -> None:
    general = reply_text(await world.admin.slash(world.general, "memory status"))
    assert general.startswith(f"**Memory of <#{world.general.id}>**")
    assert "Messages: 64 logged, 0 erased" in general
    row = await world.engine.row_addresses(world.general_chat)
    assert f"Memory row: {len(row)} lines" in general
    other = reply_text(await world.admin.slash(world.general, "memory status", channel=world.other))
    assert other.startswith(f"**Memory of <#{world.other.id}>**") and "Messages: 7 logged" in other
    assert (
        "Memory row: 0 lines" in other and "compaction starts when the raw tail passes 2,000 bytes" in other
    )


async def test_view_is_the_exact_text_the_model_reads(world: World) -> None:
    result = await world.admin.slash(world.general, "memory view", channel=world.other)
    assert result.response is not None and result.response.ephemeral
    [attachment] = result.response.attachments
    data = await attachment.read()
    # `eva view` prints engine.prompt_view(chat).render(); /memory view must send the same text.
    assert data.decode("utf-8") == (await world.engine.prompt_view(world.other_chat)).render()
    assert "the zebra 0" in data.decode("utf-8")
    general = await world.admin.slash(world.general, "memory view")
    [general_file] = general.response.attachments  # type: ignore[union-attr]
    text = (await general_file.read()).decode("utf-8")
    assert text == (await world.engine.prompt_view(world.general_chat)).render()
    assert text.startswith("<memory>\n0+") and "zebra" not in text


async def test_node_shows_line_dates_authors_and_children(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    row = await world.engine.row_addresses(world.general_chat)
    wide = next(a for a in row if int(a.split("+")[1]) >= 4)
    first, count = (int(p) for p in wide.split("+"))
    async with sessions() as s:
        node = await s.get(TreeNode, (world.general_chat, count.bit_length() - 1, first // count))
    assert node is not None
    shown = reply_text(await world.admin.slash(world.general, "memory node", address=wide))
    origin = "written by the model" if node.by_model else "free: the words themselves"
    assert shown.startswith(
        f"**line {wide} (messages {first} to {first + count - 1})**, 2026-01-05, {origin}"
    )
    assert "Authors: " in shown and "alice" in shown and "bob" in shown
    assert await world.engine.zoom_address(world.general_chat, wide) in shown
    offered = await world.admin.autocomplete(world.general, "memory node", "address", wide)
    assert wide in [c["value"] for c in offered]
    bad = reply_text(await world.admin.slash(world.general, "memory node", address="3+2"))
    assert bad == "3+2: the first message of a 2-message line must be a multiple of 2"
    assert len(world.env.errors) == 1


async def test_compact_builds_and_swaps_now(world: World) -> None:
    later = [
        NewMessage(
            "bob",
            START + timedelta(hours=5, minutes=k),
            f"late message {k} " + "x" * 60,
            author_id=world.bob.id,
        )
        for k in range(40)
    ]
    await world.engine.append_many(world.general_chat, later)
    before = await world.engine.prompt_view(world.general_chat)
    text = reply_text(await world.admin.slash(world.general, "memory compact"))
    assert text.startswith(f"Compacted <#{world.general.id}>: ") and "the new memory row is in use" in text
    after = await world.engine.prompt_view(world.general_chat)
    assert after.boundary > before.boundary


async def test_pause_and_resume(world: World) -> None:
    paused = reply_text(await world.admin.slash(world.general, "memory pause", channel=world.other))
    assert paused == (
        f"Paused: in <#{world.other.id}> I no longer log messages and no longer reply."
        " What I remember of it stays; /memory resume undoes both."
    )
    assert (await world.engine.chat_by_discord_id(world.other.id)).paused  # type: ignore[union-attr]
    again = reply_text(await world.admin.slash(world.general, "memory pause", channel=world.other))
    assert again == f"Logging in <#{world.other.id}> was already paused."
    await world.alice.send(world.other, "said while paused")
    assert await world.ingest.flush(timeout=5)
    assert await world.engine.message_count(world.other_chat) == 7  # ingest skips a paused channel
    resumed = reply_text(await world.admin.slash(world.other, "memory resume"))
    assert resumed == f"Resumed: I log messages in <#{world.other.id}> and reply there again."
    assert not (await world.engine.chat_by_discord_id(world.other.id)).paused  # type: ignore[union-attr]
    await world.alice.send(world.other, "said after resuming")
    assert await world.ingest.flush(timeout=5)
    assert "said after resuming" in await world.engine.zoom_address(
        world.other_chat, f"{await world.engine.message_count(world.other_chat) - 1}+1"
    )


async def test_wipe_asks_first_and_erases_only_that_channel(world: World) -> None:
    result = await world.admin.slash(world.general, "memory wipe", channel=world.other)
    assert "Nothing is erased until you press the button" in reply_text(result)
    assert await world.engine.message_count(world.other_chat) == 7
    with pytest.raises(simcord.SetupError):
        await world.alice.click(result.response, label="Wipe this memory")  # type: ignore[arg-type]
    await world.admin.click(result.response, label="Wipe this memory")  # type: ignore[arg-type]
    assert reply_text(result) == f"Wiped the memory of <#{world.other.id}>: 7 messages erased."
    assert await world.engine.message_count(world.other_chat) == 0
    assert await world.engine.message_count(world.general_chat) == 64
    here = await world.admin.slash(world.general, "memory wipe")
    await world.admin.click(here.response, label="Wipe this memory")  # type: ignore[arg-type]
    assert reply_text(here).startswith(f"Wiped the memory of <#{world.general.id}>: 64 messages and ")
    assert await world.engine.row_addresses(world.general_chat) == []
