"""/settings through the Discord fake (SimCord under the real discord.py), and what each setting
does to the replies: where, who, the name trigger, the model, the time zone and the budget."""

from __future__ import annotations

from datetime import UTC, datetime

import discord
import pytest
import simcord
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.tree import NEED_MANAGE_SERVER
from bot.reply.gate import BUDGET_PAUSED_NOTE
from bot.reply.limits import SOMETHING_BROKE_NOTE
from memory.errors import UserFacingError
from memory.policy.guild_settings import GuildSettingsStore
from memory.storage.models import Chat, GuildSettings, Message, UsageEntry
from tests.fakes.anthropic_api import FakeAnthropic
from tests.worlds.commands_world import causes
from tests.worlds.reply_fixtures import fake, settings, simcord_bot
from tests.worlds.settings_world import (
    EXTENSIONS,
    SettingsWorld,
    build_settings_world,
    is_logged,
    said,
    spend,
)

SUBCOMMANDS = {
    f"settings {name}"
    for name in (
        "show",
        "replies",
        "reply-channel",
        "name-trigger",
        "access",
        "model",
        "timezone",
        "budget",
        "recall-language",
    )
}


__all__ = ["fake", "settings", "simcord_bot"]  # fixtures shared with the reply tests


@pytest.fixture
def world_extensions() -> tuple[str, ...]:
    return EXTENSIONS


@pytest.fixture
async def w(simcord_env: simcord.Env, fake: FakeAnthropic) -> SettingsWorld:
    return await build_settings_world(simcord_env, fake)


async def mention(
    w: SettingsWorld, who: simcord.MemberActor, channel: simcord.ChannelHandle
) -> discord.Message:
    w.base.later()  # past the per-user cooldown
    return await who.send(channel, f"{w.base.me.mention} are you there?")


async def test_settings_are_for_admins_and_checked_again_at_run_time(
    w: SettingsWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general = w.base.general
    assert set(w.admin.available_commands(general)) >= SUBCOMMANDS
    assert not set(w.base.alice.available_commands(general)) & SUBCOMMANDS
    with pytest.raises(simcord.SetupError, match="not visible"):
        await w.base.alice.slash(general, "settings show")
    # A server admin opens the default to alice (Server Settings > Integrations): still refused.
    command = next(c for c in await w.env.bot.tree.fetch_commands() if c.name == "settings")
    w.base.guild.set_command_permissions(command, {w.base.alice: True})
    assert said(await w.base.alice.slash(general, "settings replies", where="nowhere")) == NEED_MANAGE_SERVER
    assert said(await w.base.alice.slash(general, "settings show")) == NEED_MANAGE_SERVER
    async with sessions() as s:
        assert (await s.scalars(select(GuildSettings))).all() == []  # nothing was stored
    assert [type(e).__name__ for e in causes(w.env.errors)] == ["MissingPermissions", "MissingPermissions"]


async def test_show_gives_the_defaults_then_what_the_server_chose(w: SettingsWorld) -> None:
    general = w.base.general
    shown = said(await w.admin.slash(general, "settings show"))
    assert "Replies: everywhere I can read." in shown
    assert "My name (Eva) makes me reply: yes" in shown and "Who may talk to me: everyone." in shown
    assert "Model: claude-sonnet-5-5" in shown and "Time zone: UTC." in shown
    # March 2, 09:00 (the world's clock): 1.375 days into the month, too early to be sure.
    assert (
        "Budget: no budget; $0.00 spent this month, about $0.00 by the month's end at this pace"
        " (rough: 1 day of spending)." in shown
    )
    await w.admin.slash(general, "settings replies", where="channels")
    await w.admin.slash(general, "settings reply-channel", channel=general)
    await w.admin.slash(general, "settings access", rule="block", role=w.muted)
    await w.admin.slash(general, "settings budget", usd=20.0, alerts=w.mods)
    shown = said(await w.admin.slash(general, "settings show"))
    assert f"Replies*: only in the listed channels: <#{general.id}>." in shown
    assert f"Who may talk to me: everyone; never <@&{w.muted.id}> (roles) or none (members)." in shown
    assert (
        "Budget*: $20.00 a month; $0.00 spent this month (0%), about $0.00 by the month's end at this pace"
        f" (rough: 1 day of spending); the warning (80% spent, or a forecast over the budget) goes to"
        f" <#{w.mods.id}>." in shown
    )


async def test_replies_only_in_listed_channels_and_the_rest_is_still_logged(
    w: SettingsWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general, alice = w.base.general, w.base.alice
    text = said(await w.admin.slash(general, "settings replies", where="channels"))
    assert text.startswith("I now reply only in the listed channels. Listed: none")
    added = said(await w.admin.slash(general, "settings reply-channel", channel=general))
    assert added == f"<#{general.id}> is now on the list of reply channels."
    elsewhere = await mention(w, alice, w.random)
    assert await is_logged(sessions, elsewhere) and w.base.replies() == []
    assert w.base.bot_messages(w.random) == []
    here = await mention(w, alice, general)
    assert await is_logged(sessions, here) and len(w.base.replies()) == 1
    # Nowhere: she listens (and remembers) but answers no one.
    await w.admin.slash(general, "settings replies", where="nowhere")
    quiet = await mention(w, alice, general)
    assert await is_logged(sessions, quiet) and len(w.base.replies()) == 1
    await w.admin.slash(general, "settings replies", where="everywhere")
    await mention(w, alice, w.random)
    assert len(w.base.replies()) == 2 and len(w.base.bot_messages(w.random)) == 1


async def test_block_wins_and_an_allow_list_admits_only_those(
    w: SettingsWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general = w.base.general
    blocked = said(await w.admin.slash(general, "settings access", rule="block", role=w.muted))
    assert blocked == f"Added <@&{w.muted.id}> to the block list."
    muted_ask = await mention(w, w.carol, general)
    assert await is_logged(sessions, muted_ask) and w.base.replies() == []
    await mention(w, w.base.bob, general)
    assert len(w.base.replies()) == 1
    # Allow carol by name: the role block still wins.
    await w.admin.slash(general, "settings access", rule="allow", member=w.carol)
    await mention(w, w.carol, general)
    assert len(w.base.replies()) == 1
    # With an allow list, bob (not on it) is not answered; alice once she is added.
    await mention(w, w.base.bob, general)
    assert len(w.base.replies()) == 1
    await w.admin.slash(general, "settings access", rule="allow", member=w.base.alice)
    await mention(w, w.base.alice, general)
    assert len(w.base.replies()) == 2
    removed = said(await w.admin.slash(general, "settings access", rule="block", role=w.muted, remove=True))
    assert removed == f"Removed <@&{w.muted.id}> from the block list."
    await mention(w, w.carol, general)
    assert len(w.base.replies()) == 3
    both = said(await w.admin.slash(general, "settings access", rule="block", role=w.muted, member=w.carol))
    assert both == "Give exactly one role or one member."
    assert [type(e) for e in causes(w.env.errors)] == [UserFacingError]


async def test_the_name_trigger_can_be_switched_per_server(w: SettingsWorld) -> None:
    general, alice = w.base.general, w.base.alice
    await alice.send(general, "eva, what do you think?")
    assert len(w.base.replies()) == 1
    off = said(await w.admin.slash(general, "settings name-trigger", enabled=False))
    assert off == "Saying Eva no longer makes me reply."
    w.base.later()
    await alice.send(general, "eva, still there?")
    assert len(w.base.replies()) == 1
    await mention(w, alice, general)  # a mention always works
    assert len(w.base.replies()) == 2


@pytest.mark.parametrize("settings", [{"allowed_reply_models": "claude-haiku-4-5"}], indirect=True)
async def test_the_reply_model_comes_from_the_hosts_list(
    w: SettingsWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general = w.base.general
    refused = said(await w.admin.slash(general, "settings model", name="claude-opus-4-1"))
    assert refused == (
        "'claude-opus-4-1' is not a model the host allows; pick one of: claude-sonnet-5-5, claude-haiku-4-5."
    )
    assert [type(e) for e in causes(w.env.errors)] == [UserFacingError]
    choices = await w.admin.autocomplete(general, "settings model", "name", "hai")
    assert [c["value"] for c in choices] == ["claude-haiku-4-5"]
    assert said(await w.admin.slash(general, "settings model", name="claude-haiku-4-5")) == (
        "I now reply with claude-haiku-4-5."
    )
    await mention(w, w.base.alice, general)
    assert [r.body["model"] for r in w.base.replies()] == ["claude-haiku-4-5"]
    async with sessions() as s:
        models = set((await s.scalars(select(UsageEntry.model).where(UsageEntry.kind == "reply"))).all())
    assert models == {"claude-haiku-4-5"}  # the ledger prices what was really called
    await w.admin.slash(general, "settings model", name="default")
    await mention(w, w.base.alice, general)
    assert w.base.replies()[-1].body["model"] == "claude-sonnet-5-5"


async def test_the_time_zone_is_an_iana_name_and_moves_the_memory_dates(
    w: SettingsWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general = w.base.general
    bad = said(await w.admin.slash(general, "settings timezone", name="CEST"))
    assert bad == "'CEST' is not an IANA time zone name; use one like Europe/Stockholm or America/New_York."
    assert [type(e) for e in causes(w.env.errors)] == [UserFacingError]
    good = said(await w.admin.slash(general, "settings timezone", name="Asia/Tokyo"))
    assert good == "Dates in my memory of this server now read in Asia/Tokyo."
    async with sessions() as s:
        assert await s.scalar(select(Chat.timezone).where(Chat.id == w.base.chat_id)) == "Asia/Tokyo"
    await mention(w, w.base.alice, general)
    note = w.base.replies()[-1].body["messages"][0]["content"][-1]["text"]
    assert "(Asia/Tokyo, " in note  # the turn's clock line reads in the server's zone


async def test_the_recall_language_reindexes_the_servers_chats(
    w: SettingsWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general = w.base.general
    good = said(await w.admin.slash(general, "settings recall-language", language="swedish"))
    assert good == "recall now finds other forms of words in swedish."
    async with sessions() as s:
        assert await s.scalar(select(GuildSettings.search_language)) == "swedish"
        chat = await s.scalar(select(Chat.search_config).where(Chat.id == w.base.chat_id))
        configs = set(
            (await s.scalars(select(Message.search_config).where(Message.chat_id == w.base.chat_id))).all()
        )
    assert chat == "eva_swedish" and configs == {"eva_swedish"}
    said(await w.admin.slash(general, "settings recall-language", language="auto"))
    async with sessions() as s:
        assert await s.scalar(select(GuildSettings.search_language)) is None
        configs = set(
            (await s.scalars(select(Message.search_config).where(Message.chat_id == w.base.chat_id))).all()
        )
    assert "eva_swedish" not in configs


async def test_the_budget_warns_the_admins_at_80_percent_and_pauses_at_100(
    w: SettingsWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general, alice, guild_id = w.base.general, w.base.alice, w.base.guild.id
    now = w.base.clock.now()
    me = w.base.guild.me
    assert me is not None
    closed = w.base.guild.create_text_channel(
        "closed", overwrites={me: discord.PermissionOverwrite(send_messages=False)}
    )
    refused = said(await w.admin.slash(general, "settings budget", usd=10.0, alerts=closed))
    assert refused == f"I cannot post in <#{closed.id}>; pick a channel where I may send messages."
    assert [type(e) for e in causes(w.env.errors)] == [UserFacingError]
    set_to = said(await w.admin.slash(general, "settings budget", usd=10.0, alerts=w.mods))
    assert set_to.startswith("Budget set to $10.00 a month for replies and summaries together.")
    await spend(sessions, "7.90", now, guild_id=guild_id)
    await mention(w, alice, general)
    assert len(w.base.replies()) == 1 and w.base.bot_messages(w.mods) == []  # under 80%
    await spend(sessions, "0.20", now, guild_id=guild_id)  # now past $8
    await mention(w, alice, general)
    assert len(w.base.replies()) == 2
    (warning,) = w.base.bot_messages(w.mods)
    assert warning.content.startswith("Heads-up for the admins of friends: I've spent $8.")
    assert "of this month's $10.00 budget (8" in warning.content
    await mention(w, alice, general)
    assert len(w.base.replies()) == 3 and len(w.base.bot_messages(w.mods)) == 1  # once a month
    await spend(sessions, "2.00", now, guild_id=guild_id)  # past $10
    before = len(w.base.bot_messages())
    asked = await mention(w, alice, general)
    assert len(w.base.replies()) == 3  # no model call
    assert [m.content for m in w.base.bot_messages()[before:]] == [BUDGET_PAUSED_NOTE]
    assert await is_logged(sessions, asked)
    await mention(w, w.base.bob, general)
    assert len(w.base.replies()) == 3 and len(w.base.bot_messages()) == before + 1  # one notice only
    shown = said(await w.admin.slash(general, "settings show"))
    assert "replies paused until the 1st" in shown
    await w.admin.slash(general, "settings budget", usd=50.0)
    await mention(w, alice, general)
    assert len(w.base.replies()) == 4  # a raised budget answers again


async def test_the_warning_comes_early_when_the_months_pace_would_cross_the_budget(
    w: SettingsWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general, guild_id = w.base.general, w.base.guild.id
    await w.admin.slash(general, "settings budget", usd=10.0, alerts=w.mods)
    # March: $1 on the 1st, $3 on the 8th; on the 10th that is 40% spent, and the last week's
    # $3 (3/7 a day) for the 22 days left puts the month at 4 + 9.43 = $13.43.
    await spend(sessions, "1.00", datetime(2026, 3, 1, 12, tzinfo=UTC), guild_id=guild_id)
    await spend(sessions, "3.00", datetime(2026, 3, 8, tzinfo=UTC), guild_id=guild_id)
    w.base.clock.set(datetime(2026, 3, 10, tzinfo=UTC))
    shown = said(await w.admin.slash(general, "settings show"))
    assert "$4.00 spent this month (40%), about $13.43 by the month's end at this pace (steady" in shown
    await mention(w, w.base.alice, general)
    assert len(w.base.replies()) == 1  # a warning, not a pause
    (warning,) = w.base.bot_messages(w.mods)
    assert (
        "I've spent $4.00 of this month's $10.00 budget (40%), about $13.43 by the month's end"
        in warning.content
    )
    assert "(steady: 9 days of spending)" in warning.content


async def test_without_an_alert_channel_the_owner_gets_the_warning_by_dm(
    w: SettingsWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general = w.base.general
    await w.admin.slash(general, "settings budget", usd=1.0)
    await spend(sessions, "0.85", w.base.clock.now(), guild_id=w.base.guild.id)
    await mention(w, w.base.alice, general)
    owner_dm = w.base.guild.owner.dm_channel.history()
    assert len(owner_dm) == 1 and owner_dm[0].content.startswith("Heads-up for the admins of friends")


async def test_a_paused_channel_gets_no_replies(
    w: SettingsWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    general = w.base.general
    paused = said(await w.admin.slash(general, "memory pause"))
    assert "no longer log messages and no longer reply" in paused
    asked = await mention(w, w.base.alice, general)
    assert w.base.replies() == [] and w.base.bot_messages() == []
    assert not await is_logged(sessions, asked)  # paused: not logged either
    await w.admin.slash(general, "memory resume")
    await mention(w, w.base.alice, general)
    assert len(w.base.replies()) == 1


async def test_when_the_settings_cannot_be_read_nobody_is_answered(
    w: SettingsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    await w.admin.slash(w.base.general, "settings access", rule="block", role=w.muted)

    async def database_down(self: GuildSettingsStore, guild_id: int) -> None:
        raise ConnectionRefusedError("the database is down")

    monkeypatch.setattr(GuildSettingsStore, "choices", database_down)
    await mention(w, w.carol, w.base.general)  # blocked, and the block list cannot be read
    await mention(w, w.base.alice, w.base.general)
    assert w.base.replies() == []  # nobody reached the model; each got the short apology only
    assert [m.content for m in w.base.bot_messages()] == [SOMETHING_BROKE_NOTE, SOMETHING_BROKE_NOTE]
    await w.base.alice.send(w.base.general, f"{w.base.me.mention} again?")  # within the same minute
    assert len(w.base.bot_messages()) == 2
