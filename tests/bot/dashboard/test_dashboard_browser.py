"""The dashboard in a real headless Chromium (Debian's), against the real database and the
SimCord Discord: sign in with the link the real `/memory dashboard` gives, open a chat, zoom a
line down to a message, search, change a setting and find it in `/settings show` and in the
audit list; and a screenshot of every page (docs/images/ keeps them for the README:
EVA_SCREENSHOTS=docs/images refreshes them). Skips, with the reason, without Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.worlds.browser import Browser, programs, start_browser
from tests.worlds.commands_world import reply_text
from tests.worlds.dashboard_world import HOSTILE, DashboardWorld

ZOOM_DEPTH = 12  # 64 messages: at most 6 levels, then the message


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[Browser]:
    programs()  # skips (or fails under CI) before anything starts
    started = start_browser(tmp_path)
    try:
        yield started
    finally:
        await started.call(started.driver.quit)


async def sign_in(browser: Browser, dash: DashboardWorld) -> None:
    await browser.open(await dash.link())
    await browser.click("#signin")
    await browser.find("main h1")
    assert (await browser.url()).endswith(f"/g/{dash.guild_id}")


async def zoom_to_a_message(browser: Browser) -> str:
    """Click the first row line, then the first line of each opened part, until a message opens."""
    await browser.click("main > ul.row > li.line")
    for depth in range(1, ZOOM_DEPTH):
        await browser.until(lambda d, depth=depth: len(d.find_elements("css selector", "li.zoomed")) >= depth)
        deepest = (await browser.all("li.zoomed"))[-1]
        messages = await browser.call(deepest.find_elements, "css selector", "pre.message")
        if messages:
            return str(await browser.call(lambda found=messages[0]: found.text))
        lines = await browser.call(deepest.find_elements, "css selector", "li.line")
        await browser.call(lines[0].click)
    raise AssertionError("no message after zooming all the way down")


async def test_sign_in_read_zoom_search_and_change_a_setting(browser: Browser, dash: DashboardWorld) -> None:
    world = dash.world
    await sign_in(browser, dash)
    overview = await browser.text("main")
    assert "general" in overview and "other" in overview and "alice-dm" not in overview
    await browser.screenshot("dashboard-overview")

    # A chat's memory: the row exactly as the model reads it, line by line with its address.
    await browser.click(f'a[href$="/chat/{world.general_chat}"]')
    await browser.find("main > ul.row > li.line")
    shown = [
        await browser.call(lambda e=e: e.text) for e in await browser.all("main > ul.row > li.line .addr")
    ]
    assert shown == await world.engine.row_addresses(world.general_chat)
    view = await world.engine.prompt_view(world.general_chat)
    texts = [
        await browser.call(lambda e=e: e.text) for e in await browser.all("main > ul.row > li.line .text")
    ]
    assert texts == [line.split("|", 1)[1] for line in view.row_lines]
    assert await browser.text("pre.tail") == view.tail_text()
    await browser.screenshot("dashboard-memory")

    message = await zoom_to_a_message(browser)
    assert "alice: message 0 about the canoe trip and paddles, number 0" in message
    await browser.js("document.querySelector('pre.message').scrollIntoView({block: 'center'})")
    await browser.screenshot("dashboard-zoom")

    search = await browser.find('input[name="q"]')
    await browser.call(search.send_keys, "word150")
    await browser.click("form.search button")
    hits = await browser.text("pre.recall")
    assert hits.startswith("Hit 1: message #5") and "\n>#5 2026-01-05 09:05 bob: word0 word1" in hits
    await browser.screenshot("dashboard-search")

    # Settings: change the time zone here, read it back through /settings show and the audit list.
    await browser.open(f"{dash.base}/g/{dash.guild_id}/settings")
    zone = await browser.find('input[name="timezone"]')
    await browser.call(zone.clear)
    await browser.call(zone.send_keys, "Europe/Stockholm")
    await browser.click('button[value="scalars"]')
    assert await browser.text("p.notice") == "Saved."
    shown_settings = reply_text(await world.admin.slash(world.general, "settings show"))
    assert "Time zone*: Europe/Stockholm." in shown_settings
    audit = await browser.text("main table")
    assert "ada dashboard timezone Europe/Stockholm" in audit
    # A change made with /settings lands in the same list.
    await world.admin.slash(world.general, "settings name-trigger", enabled=False)
    await browser.open(f"{dash.base}/g/{dash.guild_id}/settings")
    assert "ada slash reply_to_name off" in await browser.text("main table")
    await browser.screenshot("dashboard-settings")

    await world.engine.erase_messages(world.general_chat, [10_003])
    await browser.open(f"{dash.base}/g/{dash.guild_id}/privacy")
    privacy = await browser.text("main")
    assert "1 messages erased" in privacy and "bob" not in privacy
    await browser.screenshot("dashboard-privacy")
    await browser.open(f"{dash.base}/g/{dash.guild_id}/compactor")
    assert "general" in await browser.text("main table")
    await browser.screenshot("dashboard-compactor")


async def test_host_page_shows_every_server_and_dm_counts_only(
    browser: Browser, dash: DashboardWorld
) -> None:
    secret = await dash.world.engine.new_dashboard_link(None, None)
    await browser.open(f"{dash.base}/signin?t={secret}")
    await browser.click("#signin")
    page = await browser.text("main")
    assert (await browser.url()).endswith("/host")
    assert "friends" in page and "second" in page
    assert "1 DM chats holding 1 messages" in page and "alice-dm" not in page
    await browser.screenshot("dashboard-host")


async def test_a_script_in_a_message_stays_text_in_the_browser(
    browser: Browser, dash: DashboardWorld
) -> None:
    await sign_in(browser, dash)
    await browser.open(f"{dash.base}/g/{dash.guild_id}/chat/{dash.hostile_chat}")
    tail = await browser.text("pre.tail")
    assert HOSTILE in tail  # shown as the characters it is made of
    assert await browser.js("return window.pwned === undefined") is True
    assert await browser.js("return document.title") != "pwned"
    assert await browser.all("pre.tail script, pre.tail b") == []
