"""A real headless Chromium for the dashboard's browser tests: Debian's `chromium` driven
through its `chromedriver` with selenium. Every WebDriver call blocks, so each runs in a
thread (:func:`asyncio.to_thread`) while the test's event loop keeps serving the dashboard.

Without the two programs the tests skip with the reason below; with EVA_REQUIRE_BROWSER=1
(.ci/run sets it) they fail instead, so CI can never pass without having driven a browser.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

T = TypeVar("T")
MISSING = (
    "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver);"
    " .ci/run installs them and fails if these tests skip"
)
WAIT_SECONDS = 20.0
SCREENSHOT_FOLDER = "EVA_SCREENSHOTS"  # set to docs/images to refresh the README's screenshots


def programs() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        if os.environ.get("EVA_REQUIRE_BROWSER") == "1":
            pytest.fail(f"EVA_REQUIRE_BROWSER=1 but the browser tests cannot run: {MISSING}")
        pytest.skip(MISSING)
    return chromium, driver


class Browser:
    def __init__(self, driver: webdriver.Chrome, shots: Path) -> None:
        self.driver, self.shots = driver, shots

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    async def open(self, url: str) -> None:
        await self.call(self.driver.get, url)

    async def find(self, css: str) -> WebElement:
        """The first element matching ``css``, waiting until it exists."""

        def wait() -> WebElement:
            return WebDriverWait(self.driver, WAIT_SECONDS).until(
                lambda d: d.find_element(By.CSS_SELECTOR, css)
            )

        return await self.call(wait)

    async def until(self, condition: Callable[[webdriver.Chrome], Any]) -> Any:
        """Wait until ``condition(driver)`` is truthy (a fetch the page makes, say)."""
        return await self.call(lambda: WebDriverWait(self.driver, WAIT_SECONDS).until(condition))

    async def all(self, css: str) -> list[WebElement]:
        return await self.call(self.driver.find_elements, By.CSS_SELECTOR, css)

    async def click(self, css: str) -> None:
        element = await self.find(css)
        await self.call(element.click)

    async def text(self, css: str) -> str:
        element = await self.find(css)
        return str(await self.call(lambda: element.text))

    async def js(self, script: str) -> Any:
        return await self.call(self.driver.execute_script, script)

    async def url(self) -> str:
        return str(await self.call(lambda: self.driver.current_url))

    async def screenshot(self, name: str) -> Path:
        """The page as a PNG, in the test's folder (and in EVA_SCREENSHOTS when set)."""
        target = self.shots / f"{name}.png"
        await self.call(self.driver.save_screenshot, str(target))
        folder = os.environ.get(SCREENSHOT_FOLDER)
        if folder:
            shutil.copyfile(target, Path(folder) / target.name)
        return target


def start_browser(shots: Path) -> Browser:
    chromium, chromedriver = programs()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",  # tests run as root in containers, where Chromium's sandbox cannot start
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--hide-scrollbars",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    return Browser(driver, shots)
