"""The fake Discord against a real, unpatched discord.py 2.7.1 bot (login, events, REST, interactions)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import discord
import discord.gateway
import discord.http
import pytest
from discord import app_commands
from discord.ext import commands

from tests.fakes.discord_api import (
    FakeDiscord,
    discord_endpoints_kept,
    discord_on_fake,
    point_discord_at,
    restore_discord_endpoints,
)
from tests.fakes.discord_model import MANAGE_MESSAGES
from tests.fakes.discord_world import DiscordError, UploadedFile

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 5.0
AnyBot = commands.Bot | commands.AutoShardedBot


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    with discord_endpoints_kept():
        async with discord_on_fake() as d:
            yield d


def make_bot(*, message_content: bool = True, sharded: bool = False) -> AnyBot:
    intents = discord.Intents.default()
    intents.message_content = message_content
    cls = commands.AutoShardedBot if sharded else commands.Bot
    # A prefix nobody types: these tests are about events, not prefix commands.
    return cls(command_prefix="!unused-prefix!", intents=intents, guild_ready_timeout=0.05)


def record(bot: AnyBot, event: str) -> list[Any]:
    """Everything the bot dispatches as `event`, in order (wait_for alone can miss back-to-back events)."""
    seen: list[Any] = []

    async def listener(*args: Any) -> None:
        seen.append(args[0] if len(args) == 1 else args)

    bot.add_listener(listener, f"on_{event}")
    return seen


async def eventually(check: Callable[[], bool]) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT_S
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def running(bot: AnyBot) -> AsyncIterator[AnyBot]:
    """bot.start() in the background until on_ready; bot.close() afterwards."""
    ready = asyncio.Event()

    async def on_ready() -> None:
        ready.set()

    bot.add_listener(on_ready)
    runner = asyncio.create_task(bot.start("fake-token"))
    waiter = asyncio.create_task(ready.wait())
    done, _ = await asyncio.wait({runner, waiter}, timeout=TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
    try:
        if runner in done:
            runner.result()  # raises the login/connect error
        assert waiter in done, "bot never became ready"
        yield bot
    finally:
        waiter.cancel()
        await bot.close()
        await asyncio.wait_for(runner, TIMEOUT_S)


async def test_login_gets_ready_with_guild_channels_roles_and_members(fake: FakeDiscord) -> None:
    async with running(make_bot()) as bot:
        ids = fake.ids
        assert bot.user is not None and bot.user.id == ids.bot
        assert bot.application_id == ids.application
        guild = bot.get_guild(ids.guild)
        assert guild is not None and guild.me is not None
        assert {c.name for c in guild.text_channels} == {"general", "random"}
        assert [t.id for t in guild.threads] == [ids.thread]
        assert guild.default_role.permissions.read_message_history
        admin, alice = await guild.fetch_member(ids.admin), await guild.fetch_member(ids.alice)
        assert admin.guild_permissions.manage_guild and not alice.guild_permissions.manage_guild
        assert guild.owner_id == ids.owner
    paths = [(r["method"], r["path"]) for r in fake.request_log]
    assert ("GET", "/users/@me") in paths and ("GET", "/oauth2/applications/@me") in paths
    assert ("GET", "/gateway/bot") not in paths  # a plain Bot uses DEFAULT_GATEWAY


async def test_user_message_reaches_on_message_and_the_reply_comes_back(fake: FakeDiscord) -> None:
    async with running(make_bot()) as bot:
        ids = fake.ids
        attachment = UploadedFile("notes.txt", b"hello file", "text/plain")
        fake.chat.post_user_message(ids.general, ids.alice, f"hi <@{ids.bot}>", attachments=[attachment])
        message = await bot.wait_for("message", timeout=TIMEOUT_S)
        assert message.content == f"hi <@{ids.bot}>"
        assert isinstance(message.author, discord.Member) and message.author.id == ids.alice
        assert message.guild is not None and message.guild.id == ids.guild
        assert [m.id for m in message.mentions] == [ids.bot]
        assert [a.filename for a in message.attachments] == ["notes.txt"]
        assert await message.attachments[0].read() == b"hello file"

        sent = await message.reply("hello back", file=discord.File(io.BytesIO(b"x = 1"), filename="code.py"))
        echoed = await bot.wait_for("message", check=lambda m: m.author.id == ids.bot, timeout=TIMEOUT_S)
        assert echoed.id == sent.id and echoed.content == "hello back"
        assert echoed.reference is not None and echoed.reference.message_id == message.id
        stored = fake.world.channel_messages(ids.general)[-1]
        assert stored["content"] == "hello back" and stored["type"] == 19
        assert [a["filename"] for a in stored["attachments"]] == ["code.py"]
        sticker = {"id": "1", "name": "wave", "format_type": 1}
        fake.chat.post_user_message(
            ids.thread,
            ids.bob,
            "in thread",
            reply_to=sent.id,
            sticker_items=[sticker],
            embeds=[{"title": "t"}],
        )
        reply = await bot.wait_for("message", check=lambda m: m.author.id == ids.bob, timeout=TIMEOUT_S)
        assert isinstance(reply.channel, discord.Thread) and reply.channel.id == ids.thread
        assert reply.reference is not None and reply.reference.resolved is not None
        assert reply.reference.resolved.content == "hello back"
        assert [s.name for s in reply.stickers] == ["wave"] and reply.embeds[0].title == "t"
    posts = fake.requests("POST", f"/channels/{ids.general}/messages")
    assert posts[0]["json"]["content"] == "hello back" and posts[0]["files"] == ["code.py"]


async def test_without_message_content_intent_only_mentions_keep_their_text(fake: FakeDiscord) -> None:
    async with running(make_bot(message_content=False)) as bot:
        ids = fake.ids
        seen = record(bot, "message")
        fake.chat.post_user_message(ids.general, ids.alice, "private chatter")
        fake.chat.post_user_message(ids.general, ids.alice, f"<@{ids.bot}> hey")
        await eventually(lambda: len(seen) == 2)
        assert [m.content for m in seen] == ["", f"<@{ids.bot}> hey"]


async def test_overlong_and_empty_messages_get_discords_errors(fake: FakeDiscord) -> None:
    async with running(make_bot()) as bot:
        channel = bot.get_channel(fake.ids.general)
        assert isinstance(channel, discord.TextChannel)
        with pytest.raises(discord.HTTPException) as too_long:
            await channel.send("x" * 2001)
        assert (too_long.value.status, too_long.value.code) == (400, 50035)
        assert "2000 or fewer" in too_long.value.text
        await channel.send("x" * 2000)
        with pytest.raises(discord.HTTPException) as empty:
            await channel.send(embeds=[])
        assert empty.value.code == 50006


async def test_history_pages_through_250_messages_oldest_first(fake: FakeDiscord) -> None:
    ids = fake.ids
    start = datetime.now(UTC) - timedelta(hours=3)
    seeded = [
        fake.chat.post_user_message(
            ids.random, ids.bob, f"m{i}", when=start + timedelta(seconds=i), announce=False
        )
        for i in range(250)
    ]
    async with running(make_bot()) as bot:
        channel = bot.get_channel(ids.random)
        assert isinstance(channel, discord.TextChannel)
        fake.request_log.clear()
        after = discord.Object(int(seeded[9]["id"]))
        forward = [m.content async for m in channel.history(after=after, oldest_first=True, limit=None)]
        assert forward == [f"m{i}" for i in range(10, 250)]
        assert len(fake.requests("GET", f"/channels/{ids.random}/messages")) == 3  # 100 + 100 + 40
        backward = [m.content async for m in channel.history(limit=None)]
        assert backward == [f"m{i}" for i in reversed(range(250))]
        around = [
            m.content async for m in channel.history(around=discord.Object(int(seeded[100]["id"])), limit=5)
        ]
        assert "m100" in around and len(around) == 5


async def test_deletes_and_edits_fire_raw_events(fake: FakeDiscord) -> None:
    async with running(make_bot()) as bot:
        ids = fake.ids
        seen = record(bot, "message")
        posted = [fake.chat.post_user_message(ids.general, ids.alice, f"n{i}") for i in range(4)]
        await eventually(lambda: len(seen) == 4)
        fake.chat.edit_user_message(int(posted[0]["id"]), "edited")
        edit = await bot.wait_for("raw_message_edit", timeout=TIMEOUT_S)
        assert edit.message_id == int(posted[0]["id"]) and edit.message.content == "edited"
        assert edit.data["content"] == "edited" and edit.guild_id == ids.guild

        fake.chat.delete_message(int(posted[1]["id"]))
        deleted = await bot.wait_for("raw_message_delete", timeout=TIMEOUT_S)
        assert (deleted.message_id, deleted.channel_id, deleted.guild_id) == (
            int(posted[1]["id"]),
            ids.general,
            ids.guild,
        )

        fake.chat.bulk_delete(ids.general, [int(posted[2]["id"]), int(posted[3]["id"])])
        bulk = await bot.wait_for("raw_bulk_message_delete", timeout=TIMEOUT_S)
        assert bulk.message_ids == {int(posted[2]["id"]), int(posted[3]["id"])}

        channel = bot.get_channel(ids.general)
        assert isinstance(channel, discord.TextChannel)
        mine = [await channel.send(f"bot {i}") for i in range(2)]
        with pytest.raises(discord.Forbidden):  # bulk delete needs Manage Messages, even for own messages
            await channel.delete_messages(mine)
        moderator = fake.world.add_role(ids.guild, "Mod", MANAGE_MESSAGES)
        fake.world.give_role(ids.guild, ids.bot, moderator.id)
        await bot.wait_for("member_update", timeout=TIMEOUT_S)
        await channel.delete_messages(mine)  # bot side: POST .../bulk-delete
        bulk = await bot.wait_for("raw_bulk_message_delete", timeout=TIMEOUT_S)
        assert bulk.message_ids == {m.id for m in mine}
        assert [m["content"] for m in fake.world.channel_messages(ids.general)] == ["edited"]


async def test_channel_thread_and_guild_removal_events(fake: FakeDiscord) -> None:
    async with running(make_bot()) as bot:
        ids = fake.ids
        fake.world.delete_channel(ids.thread)
        thread_gone = await bot.wait_for("raw_thread_delete", timeout=TIMEOUT_S)
        assert thread_gone.thread_id == ids.thread
        fake.world.delete_channel(ids.random)
        channel_gone = await bot.wait_for("guild_channel_delete", timeout=TIMEOUT_S)
        assert channel_gone.id == ids.random
        fake.world.remove_guild(ids.guild)
        guild_gone = await bot.wait_for("guild_remove", timeout=TIMEOUT_S)
        assert guild_gone.id == ids.guild and bot.get_guild(ids.guild) is None


class ConfirmView(discord.ui.View):
    def __init__(self, owner_id: int) -> None:
        super().__init__(timeout=30)
        self.owner_id = owner_id
        self.rejected: list[int] = []

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id != self.owner_id:
            self.rejected.append(interaction.user.id)
            await interaction.response.send_message("not yours", ephemeral=True)
            return False
        return True

    @discord.ui.button(label="Delete", style=discord.ButtonStyle.danger, custom_id="confirm-delete")
    async def confirm(self, interaction: discord.Interaction, button: discord.ui.Button[ConfirmView]) -> None:
        await interaction.response.edit_message(content="deleted", view=None)
        self.stop()


def add_commands(bot: AnyBot, views: list[ConfirmView]) -> asyncio.Queue[str]:
    ran: asyncio.Queue[str] = asyncio.Queue()

    @bot.tree.command(name="forget-me", description="Forget what I said")
    async def forget_me(interaction: discord.Interaction) -> None:
        view = ConfirmView(interaction.user.id)
        views.append(view)
        await interaction.response.send_message("Really forget?", view=view)
        await ran.put("forget-me")

    @bot.tree.command(name="recall", description="Recall a topic")
    async def recall(interaction: discord.Interaction, topic: str, days: int = 7) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.followup.send(f"recalled {topic} over {days} days")
        await ran.put("recall")

    memory = app_commands.Group(
        name="memory", description="Admin", default_permissions=discord.Permissions(manage_guild=True)
    )

    @memory.command(name="inspect", description="Inspect memory")
    async def inspect(interaction: discord.Interaction, who: discord.Member) -> None:
        await interaction.response.send_message(f"inspecting {who.id}", ephemeral=True)
        await ran.put("memory inspect")

    @recall.autocomplete("topic")
    async def topics(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=f"{current}-topic", value=f"{current}-topic")]

    @bot.tree.command(name="status", description="Private status")
    async def status(interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        await interaction.edit_original_response(content="working")
        extra = await interaction.followup.send("extra", ephemeral=True, wait=True)
        await extra.delete()
        await ran.put((await interaction.original_response()).content)

    bot.tree.add_command(memory)
    return ran


async def test_slash_commands_sync_respond_and_record_ephemeral(fake: FakeDiscord) -> None:
    bot, views = make_bot(), list[ConfirmView]()
    ran = add_commands(bot, views)
    async with running(bot):
        ids = fake.ids
        with pytest.raises(DiscordError):  # Discord only delivers commands that were synced
            fake.interactions.create_command(ids.alice, ids.general, "recall", {"topic": "x"})
        synced = await bot.tree.sync()
        assert {c.name for c in synced} == {"forget-me", "recall", "memory", "status"}
        put = fake.requests("PUT", f"/applications/{ids.application}/commands")
        sent_memory = next(c for c in put[0]["json"] if c["name"] == "memory")
        stored_memory = next(c for c in fake.commands.listed() if c["name"] == "memory")
        assert len(put) == 1 and sent_memory["default_member_permissions"] == 32
        assert stored_memory["default_member_permissions"] == "32" and stored_memory["id"].isdigit()

        recall = fake.interactions.create_command(
            ids.alice, ids.general, "recall", {"topic": "cats", "days": 3}
        )
        assert await asyncio.wait_for(ran.get(), TIMEOUT_S) == "recall"
        kinds = [(r["kind"], r.get("type")) for r in fake.interactions.responses(int(recall["id"]))]
        assert kinds == [("callback", 5), ("followup", None)]
        assert fake.world.channel_messages(ids.general)[-1]["content"] == "recalled cats over 3 days"

        with pytest.raises(DiscordError):  # default_permissions hide the admin group from alice
            fake.interactions.create_command(ids.alice, ids.general, "memory inspect", {"who": ids.bob})
        inspect = fake.interactions.create_command(ids.admin, ids.general, "memory inspect", {"who": ids.bob})
        assert await asyncio.wait_for(ran.get(), TIMEOUT_S) == "memory inspect"
        [response] = fake.interactions.responses(int(inspect["id"]))
        assert response["type"] == 4 and response["ephemeral"] is True
        assert response["body"]["data"]["content"] == f"inspecting {ids.bob}"
        assert all(m["content"] != f"inspecting {ids.bob}" for m in fake.world.channel_messages(ids.general))

        bot.tree.copy_global_to(guild=discord.Object(ids.guild))
        await bot.tree.sync(guild=discord.Object(ids.guild))
        assert len(fake.commands.listed(ids.guild)) == 4


async def test_autocomplete_edit_original_and_followup_delete(fake: FakeDiscord) -> None:
    bot = make_bot()
    ran = add_commands(bot, [])
    async with running(bot):
        ids = fake.ids
        await bot.tree.sync()
        typed = fake.interactions.create_command(
            ids.bob, ids.general, "recall", {"topic": "ca"}, focused="topic"
        )
        await eventually(lambda: bool(fake.interactions.responses(int(typed["id"]))))
        [choices] = fake.interactions.responses(int(typed["id"]))
        assert choices["type"] == 8
        assert choices["body"]["data"]["choices"] == [{"name": "ca-topic", "value": "ca-topic"}]

        status = fake.interactions.create_command(ids.bob, ids.general, "status")
        assert await asyncio.wait_for(ran.get(), TIMEOUT_S) == "working"
        steps = [(r["kind"], r["ephemeral"]) for r in fake.interactions.responses(int(status["id"]))]
        assert steps == [("callback", True), ("edit", True), ("followup", True), ("delete", True)]
        assert fake.world.channel_messages(ids.general) == []  # ephemeral answers stay out of history


async def test_button_click_goes_through_interaction_check(fake: FakeDiscord) -> None:
    bot, views = make_bot(), list[ConfirmView]()
    ran = add_commands(bot, views)
    async with running(bot):
        ids = fake.ids
        await bot.tree.sync()
        invoked = fake.interactions.create_command(ids.alice, ids.general, "forget-me")
        await asyncio.wait_for(ran.get(), TIMEOUT_S)
        [callback] = fake.interactions.responses(int(invoked["id"]))
        prompt_id = int(callback["message_id"])

        bob_click = fake.interactions.click(ids.bob, prompt_id, "confirm-delete")
        await eventually(lambda: bool(fake.interactions.responses(int(bob_click["id"]))))
        [refusal] = fake.interactions.responses(int(bob_click["id"]))
        assert refusal["ephemeral"] is True and views[0].rejected == [ids.bob]

        fake.interactions.click(ids.alice, prompt_id, "confirm-delete")
        assert await asyncio.wait_for(views[0].wait(), TIMEOUT_S) is False  # stopped, not timed out
        prompt = fake.world.message(prompt_id)
        assert prompt["content"] == "deleted" and prompt["components"] == []
        with pytest.raises(DiscordError):  # the button is gone
            fake.interactions.click(ids.alice, prompt_id, "confirm-delete")


async def test_auto_sharded_bot_logs_in_and_receives_messages(fake: FakeDiscord) -> None:
    async with running(make_bot(sharded=True)) as bot:
        assert isinstance(bot, commands.AutoShardedBot) and bot.shard_count == 1
        assert bot.get_guild(fake.ids.guild) is not None
        fake.chat.post_user_message(fake.ids.general, fake.ids.alice, "sharded hello")
        message = await bot.wait_for("message", timeout=TIMEOUT_S)
        assert message.content == "sharded hello"
    assert fake.requests("GET", "/gateway/bot")


async def test_dropped_connection_resumes_and_replays_missed_events(fake: FakeDiscord) -> None:
    async with running(make_bot()) as bot:
        seen = record(bot, "message")
        resumed = asyncio.create_task(bot.wait_for("resumed", timeout=TIMEOUT_S))
        assert await fake.drop_connections() == 1
        fake.chat.post_user_message(fake.ids.general, fake.ids.alice, "said while offline")
        await resumed
        await eventually(lambda: bool(seen))
        assert [m.content for m in seen] == ["said while offline"]
        assert fake.gateway.connections == 2 and [f["op"] for f in fake.gateway.received].count(6) == 1

        resumed = asyncio.create_task(bot.wait_for("resumed", timeout=TIMEOUT_S))
        assert fake.gateway.request_reconnect() == 1  # op7: Discord asks the client to reconnect
        await resumed
        assert fake.gateway.connections == 3 and [f["op"] for f in fake.gateway.received].count(2) == 1


async def test_wrong_token_is_refused_at_login() -> None:
    async with FakeDiscord(token="right-token") as strict:
        previous = point_discord_at(strict.api_base, strict.gateway_url)
        try:
            bot = make_bot()
            with pytest.raises(discord.LoginFailure):
                async with bot:  # closes the bot's HTTP session on the way out
                    await bot.start("wrong-token")
        finally:
            restore_discord_endpoints(previous)
        assert strict.request_log[0]["status"] == 401


async def test_control_surface_drives_the_bot_over_http(fake: FakeDiscord) -> None:
    async with running(make_bot()) as bot, aiohttp.ClientSession() as http:
        ids = fake.ids
        async with http.get(f"{fake.control_url}/state") as state:
            assert (await state.json())["ids"]["general"] == str(ids.general)
        body = {
            "channel_id": str(ids.general),
            "author_id": str(ids.alice),
            "content": "via http",
            "attachments": [{"filename": "a.png", "size": 3, "content_type": "image/png"}],
        }
        async with http.post(f"{fake.control_url}/messages", json=body) as posted:
            assert posted.status == 200
        message = await bot.wait_for("message", timeout=TIMEOUT_S)
        assert message.content == "via http" and message.attachments[0].size == 3
        async with http.get(f"{fake.control_url}/channels/{ids.general}/messages") as listed:
            assert [m["content"] for m in await listed.json()] == ["via http"]

        with pytest.raises(discord.NotFound):
            await bot.http.request(discord.http.Route("GET", "/not/a/route"))
        async with http.get(f"{fake.control_url}/requests") as logged:
            unmatched = [r for r in await logged.json() if r.get("unmatched")]
        assert [r["path"] for r in unmatched] == ["/not/a/route"]

        dm_channel = fake.world.open_dm(ids.bob)
        fake.chat.post_user_message(dm_channel.id, ids.bob, "hello in private")
        private = await bot.wait_for("message", timeout=TIMEOUT_S)
        assert isinstance(private.channel, discord.DMChannel) and private.content == "hello in private"
        dm_user = await bot.fetch_user(ids.bob)
        dm = await dm_user.create_dm()
        await dm.send("psst")
        assert fake.world.channel_messages(dm.id)[-1]["content"] == "psst"


def test_runs_as_a_process_and_prints_its_urls() -> None:
    command = [sys.executable, "-m", "tests.fakes.discord_api", "--port", "0"]
    with subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            info = json.loads(process.stdout.readline())
            assert info["api_base"].endswith("/api/v10") and info["gateway_url"].startswith("ws://127.0.0.1:")
            with urllib.request.urlopen(f"{info['control_url']}/state", timeout=5) as reply:
                assert json.loads(reply.read())["ids"]["guild"] == info["ids"]["guild"]
        finally:
            process.terminate()
        assert process.wait(timeout=10) == 0  # SIGTERM is a clean shutdown
