"""The web UI tests' shared parts: headless Chromium (the Debian package, never a downloaded browser) driven
by Playwright, a page whose JavaScript console errors, page errors and failed requests are collected, and
the login. Screenshots land in test-artifacts/ (and, with WARRENMQ_README_SCREENSHOTS=1, refresh
docs/images/)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, ConsoleMessage, Page, async_playwright, expect

from tests.management.conftest import Api

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"
README_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

BROWSER_MARKS = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="chromium is not installed (apt-get install chromium chromium-driver; .ci/run does it)",
    ),
]


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            yield launched
        finally:
            await launched.close()


class Watched:
    """A page whose console errors, page errors and failed requests are collected."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        page.on("requestfailed", lambda request: self.errors.append(f"requestfailed: {request.url}"))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text}")

    async def shot(self, name: str, readme: bool = False) -> None:
        """Save a full-page artifact; with ``readme``, also the docs' image when asked to refresh them."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        if readme and os.environ.get("WARRENMQ_README_SCREENSHOTS") == "1":
            README_IMAGES.mkdir(parents=True, exist_ok=True)
            await self.page.screenshot(path=str(README_IMAGES / f"ui-{name}.png"))


async def open_ui(api: Api, browser: Browser) -> Watched:
    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    watched = Watched(page)
    api_requests: list[str] = []
    page.on("request", lambda request: api_requests.append(request.url) if "/api/" in request.url else None)
    await page.goto(f"http://127.0.0.1:{api.client.port}/")
    await expect(page.locator("input[name=username]")).to_be_visible()
    assert api_requests == []  # no API call before login, so a fresh visit logs no failed request
    return watched


async def login(watched: Watched, user: str, password: str) -> None:
    page = watched.page
    await page.fill("input[name=username]", user)
    await page.fill("input[name=password]", password)
    await page.click("form.login button[type=submit]")
    await expect(page.locator("header")).to_contain_text(f"User {user}")


async def show(page: Page, route: str) -> None:
    """Go to a hash route and wait until the UI has rendered it.

    A hash change re-renders asynchronously; until it has, the previous page's elements are still there
    (a `table` locator could see the overview's two tables), so every navigation waits for `main[data-route]`.
    """
    await page.goto(page.url.split("#")[0] + route)
    await expect(page.locator("main")).to_have_attribute("data-route", route)
