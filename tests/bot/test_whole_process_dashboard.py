"""The dashboard in the real `eva run` process against the whole-process Discord fake: the link
from `/memory dashboard` signs the admin in, the server's page and /metrics answer, and a role
taken from the admin on Discord (GUILD_MEMBER_UPDATE over the gateway) refuses the next request."""

from __future__ import annotations

import re

import aiohttp
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.dashboard.web import SERVER_COOKIE
from tests.bot.test_whole_process_settings import slash
from tests.worlds.dashboard_world import free_port
from tests.worlds.eva_process import ProcessWorld, eventually, logged_message


async def test_sign_in_read_and_lose_access_in_the_real_process(
    processes: ProcessWorld, sessions: async_sessionmaker[AsyncSession]
) -> None:
    discord_fake, ids = processes.discord, processes.discord.ids
    port = free_port()
    sync = await processes.start("sync-commands")
    assert await sync.proc.wait() == 0
    eva = await processes.run(DASHBOARD_PORT=str(port))
    try:
        posted = discord_fake.chat.post_user_message(ids.general, ids.alice, "a message for the dashboard")
        await eventually(lambda: logged_message(sessions, int(posted["id"])))
        answer = await slash(discord_fake, ids.admin, ids.general, "memory dashboard")
        found = re.search(rf"(http://127\.0\.0\.1:{port}/signin\?t=[A-Za-z0-9_-]+)", answer)
        assert found, answer
        secret = found.group(1).split("t=", 1)[1]
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
            async with http.post(f"{base}/signin", data={"t": secret}, allow_redirects=False) as signed:
                assert signed.status == 303, await signed.text()
                cookies = {SERVER_COOKIE: signed.cookies[SERVER_COOKIE].value}
            async with http.get(f"{base}/g/{ids.guild}", cookies=cookies) as page:
                assert page.status == 200 and ">general</a>" in await page.text()
            async with http.get(f"{base}/metrics") as metrics:
                samples = {
                    s.name: s.value
                    for family in text_string_to_metric_families(await metrics.text())
                    for s in family.samples
                }
            assert samples["eva_messages_logged_total"] >= 1 and samples["eva_messages_stored"] >= 1

            discord_fake.world.take_role(ids.guild, ids.admin, ids.admin_role)

            async def refused() -> bool:
                async with http.get(f"{base}/g/{ids.guild}", cookies=cookies, allow_redirects=False) as again:
                    return again.status in (403, 303)

            assert await eventually(refused)
    finally:
        await eva.terminate()
