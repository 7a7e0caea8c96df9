"""The web UI marks which node of a high-availability pair it is looking at (the overview's header and the
Nodes table's Role column), in headless Chromium."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect

from tests.ha.nodes import HANode
from tests.management.ui_browser import BROWSER_MARKS, Watched, browser, login

__all__ = ["browser"]  # the fixture, shared with the management UI suites
pytestmark = BROWSER_MARKS


async def _overview(node: HANode, browser: Browser) -> Watched:
    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    watched = Watched(page)
    await page.goto(f"http://127.0.0.1:{node.management_port}/")
    await login(watched, "guest", "guest")
    return watched


async def test_the_overview_marks_the_active_node_and_the_standby(
    postgres_dsn: str, tmp_path: Path, browser: Browser
) -> None:
    active, standby = (HANode(name, postgres_dsn, tmp_path, lease_s=30.0) for name in ("active", "standby"))
    try:
        active.start()
        active.wait_event("ready")
        standby.start()
        standby.wait_event("standby")
        on_active = await _overview(active, browser)
        await expect(on_active.page.locator("#ha-role")).to_have_text("active node (epoch 1)")
        await expect(on_active.page.locator("td b.ha-active")).to_have_text("active")
        on_standby = await _overview(standby, browser)
        await expect(on_standby.page.locator("#ha-role")).to_have_text("standby node")
        assert on_active.errors == []
        assert on_standby.errors == []
    finally:
        active.stop()
        standby.stop()
