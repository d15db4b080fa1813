"""Who reaches which dashboard page (docs/security.md, the dashboard). Each test fails when the
check it names is removed: the session, the link's expiry and single use, the binding of a
session to its server, the per-request Manage Server check against the gateway cache, the CSRF
token, escaping, DM chats kept off a server's pages, and a channel the member may not read kept
off them too."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import aiohttp
import discord
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot import health
from bot.dashboard.web import HOST_COOKIE, SERVER_COOKIE
from memory.storage.log import ChatKey, NewMessage
from memory.storage.models import DashboardLink
from tests.worlds.commands_world import START
from tests.worlds.dashboard_world import DM_SECRET, HOSTILE, DashboardWorld


def jarless() -> aiohttp.ClientSession:
    """A client that keeps no cookies: each request carries exactly the cookie a test gives it."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())


async def session_cookie(dash: DashboardWorld, http: aiohttp.ClientSession) -> str:
    signed = await dash.sign_in(http, await dash.link())
    assert signed.status == 303, await signed.text()
    assert signed.headers["Location"] == f"/g/{dash.guild_id}"
    return signed.cookies[SERVER_COOKIE].value


async def test_no_session_is_sent_to_sign_in(dash: DashboardWorld) -> None:
    async with jarless() as http:
        for path in (f"/g/{dash.guild_id}", f"/g/{dash.guild_id}/settings", "/host"):
            async with http.get(dash.base + path, allow_redirects=False) as page:
                assert page.status == 303 and page.headers["Location"] == "/signed-out"
        async with http.get(dash.base + f"/g/{dash.guild_id}", cookies={SERVER_COOKIE: "made-up"}) as page:
            assert page.url.path == "/signed-out" and "Sign in with a link" in await page.text()


async def test_the_cookie_is_httponly_strict_and_scoped_to_its_server(dash: DashboardWorld) -> None:
    async with jarless() as http:
        signed = await dash.sign_in(http, await dash.link())
        cookie = signed.cookies[SERVER_COOKIE]
        assert cookie["httponly"] and cookie["samesite"] == "Strict"
        assert cookie["path"] == f"/g/{dash.guild_id}"
        async with http.get(dash.base + f"/g/{dash.guild_id}", cookies={SERVER_COOKIE: cookie.value}) as page:
            assert page.status == 200 and "general" in await page.text()


async def test_an_expired_link_signs_nobody_in(
    dash: DashboardWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    link = await dash.link()
    async with sessions() as s, s.begin():  # eleven minutes later, as far as the link knows
        await s.execute(
            update(DashboardLink).values(expires_at=DashboardLink.expires_at - timedelta(minutes=11))
        )
    async with jarless() as http:
        refused = await dash.sign_in(http, link)
        assert refused.status == 403 and SERVER_COOKIE not in refused.cookies
        assert "has expired" in await refused.text()


async def test_a_link_works_once(dash: DashboardWorld) -> None:
    link = await dash.link()
    async with jarless() as http:
        first = await dash.sign_in(http, link)
        assert first.status == 303
        again = await dash.sign_in(http, link)
        assert again.status == 403 and SERVER_COOKIE not in again.cookies
        assert "used already" in await again.text()


async def test_a_session_for_one_server_opens_no_page_of_another(dash: DashboardWorld) -> None:
    async with jarless() as http:
        key = await session_cookie(dash, http)
        # ada manages the second server too: only the session's binding keeps her out.
        for path in (f"/g/{dash.second.id}", f"/g/{dash.second.id}/chat/{dash.second_chat}"):
            async with http.get(dash.base + path, cookies={SERVER_COOKIE: key}) as page:
                text = await page.text()
                assert page.status == 403 and "another server" in text
                assert "only the second server knows this" not in text


async def test_a_member_who_lost_manage_server_is_out_at_the_next_request(dash: DashboardWorld) -> None:
    async with jarless() as http:
        key = await session_cookie(dash, http)
        home = f"{dash.base}/g/{dash.guild_id}"
        async with http.get(home, cookies={SERVER_COOKIE: key}) as page:
            assert page.status == 200
        dash.take_manage_server()
        await dash.world.env.settle()
        async with http.get(home, cookies={SERVER_COOKIE: key}) as page:
            assert page.status == 403 and "no longer a member" in await page.text()
        async with http.get(home, cookies={SERVER_COOKIE: key}, allow_redirects=False) as page:
            assert page.status == 303  # the session was closed, not just refused once


async def test_a_form_without_its_sessions_csrf_token_changes_nothing(dash: DashboardWorld) -> None:
    store = dash.world.engine.guild_settings
    async with jarless() as http:
        key = await session_cookie(dash, http)
        url = f"{dash.base}/g/{dash.guild_id}/settings"
        for forged in ({"csrf": "forged"}, {}):
            async with http.post(
                url, data={**forged, "timezone": "Europe/Stockholm"}, cookies={SERVER_COOKIE: key},
                allow_redirects=False,
            ) as refused:  # fmt: skip
                assert refused.status == 403
        assert (await store.choices(dash.guild_id)).timezone is None
        assert await store.audit(dash.guild_id) == []


async def test_hostile_message_text_is_shown_as_text(dash: DashboardWorld) -> None:
    async with jarless() as http:
        key = await session_cookie(dash, http)
        page_url = f"{dash.base}/g/{dash.guild_id}/chat/{dash.hostile_chat}"
        async with http.get(page_url, cookies={SERVER_COOKIE: key}) as page:
            text = await page.text()
        assert "<script>window.pwned" not in text and "<b>bold</b>" not in text
        assert "&lt;script&gt;window.pwned = 1; document.title = &#x27;pwned&#x27;&lt;/script&gt;" in text
        assert page.headers["Content-Security-Policy"].startswith("default-src 'none'; script-src 'self'")
        async with http.get(page_url, params={"q": HOSTILE[:40]}, cookies={SERVER_COOKIE: key}) as found:
            assert "<script>window" not in await found.text()


async def test_dm_chats_never_appear_on_a_servers_pages(dash: DashboardWorld) -> None:
    async with jarless() as http:
        key = await session_cookie(dash, http)
        base = f"{dash.base}/g/{dash.guild_id}"
        seen = ""
        for path in ("", "/compactor", "/privacy", "/settings"):
            async with http.get(base + path, cookies={SERVER_COOKIE: key}) as page:
                assert page.status == 200
                seen += await page.text()
        assert "alice-dm" not in seen and f"/chat/{dash.dm_chat}" not in seen
        for path in (
            f"/chat/{dash.dm_chat}",
            f"/chat/{dash.dm_chat}/zoom?at=0%2B1",
            f"/chat/{dash.dm_chat}/view.txt",
        ):
            async with http.get(base + path, cookies={SERVER_COOKIE: key}) as page:
                assert page.status == 404 and DM_SECRET not in await page.text()


async def test_the_host_page_reads_the_heartbeat_eva_health_reads(
    dash: DashboardWorld, tmp_path: Path
) -> None:
    beat_file = tmp_path / "beat.json"
    dash.world.services.settings.health_file = beat_file
    secret = await dash.world.engine.new_dashboard_link(None, None)
    async with jarless() as http:
        async with http.post(f"{dash.base}/signin", data={"t": secret}, allow_redirects=False) as signed:
            assert signed.headers["Location"] == "/host"
            cookies = {HOST_COOKIE: signed.cookies[HOST_COOKIE].value}
        async with http.get(f"{dash.base}/host", cookies=cookies) as page:
            assert "Heartbeat (beat.json): no heartbeat yet" in await page.text()
        health.write(beat_file, health.Heartbeat(time.time(), True, time.time(), 15.0))
        async with http.get(f"{dash.base}/host", cookies=cookies) as page:
            text = await page.text()
        assert "Heartbeat (beat.json): healthy." in text and "database: answers" in text
        # The host's session also opens a server's pages (every server), never a member's cookie.
        async with http.get(f"{dash.base}/g/{dash.guild_id}", cookies=cookies) as server:
            assert server.status == 200


async def test_manage_server_alone_opens_no_channel_the_member_may_not_read(dash: DashboardWorld) -> None:
    # ada manages the server and may see #staff, but not read its history: as /memory refuses
    # her there (tests/bot/commands/test_commands_history.py), so does every dashboard page.
    world = dash.world
    assert world.admin is not None
    staff = world.guild.create_text_channel(
        "staff", overwrites={world.admin: discord.PermissionOverwrite(read_message_history=False)}
    )
    await world.env.settle()
    chat = await world.engine.ensure_chat(
        ChatKey("text", "staff", discord_id=staff.id, guild_id=world.guild.id)
    )
    secret = "staff note: the raise for bob is 7 percent"
    await world.engine.append_many(
        chat, [NewMessage("bob", START, secret, author_id=world.bob.id, snowflake=95_001)]
    )
    async with jarless() as http:
        key = await session_cookie(dash, http)
        base = f"{dash.base}/g/{dash.guild_id}"
        seen = ""
        for path in ("", "/compactor"):
            async with http.get(base + path, cookies={SERVER_COOKIE: key}) as page:
                assert page.status == 200
                seen += await page.text()
        assert f"/chat/{dash.hostile_chat}" in seen  # a channel she may read is listed
        assert "staff" not in seen and f"/chat/{chat}" not in seen
        for path in (f"/chat/{chat}", f"/chat/{chat}/zoom?at=0%2B1", f"/chat/{chat}/view.txt"):
            async with http.get(base + path, cookies={SERVER_COOKIE: key}) as page:
                assert page.status == 404 and secret not in await page.text()
