"""The web UI end to end in headless Chromium (the Debian package, never a downloaded browser), driven by
Playwright against a real broker and management port: log in, add a queue and a binding, publish and get a
message, see the binding's edge in the topology graph and a test key's highlighted path. Any JavaScript
console error or failed request fails the test; screenshots land in test-artifacts/ (and, with
WARRENMQ_README_SCREENSHOTS=1, refresh docs/images/)."""

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

pytestmark = [
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

    async def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        if os.environ.get("WARRENMQ_README_SCREENSHOTS") == "1":
            README_IMAGES.mkdir(parents=True, exist_ok=True)
            await self.page.screenshot(path=str(README_IMAGES / f"ui-{name}.png"))


async def _open(api: Api, browser: Browser) -> Watched:
    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    watched = Watched(page)
    api_requests: list[str] = []
    page.on("request", lambda request: api_requests.append(request.url) if "/api/" in request.url else None)
    await page.goto(f"http://127.0.0.1:{api.client.port}/")
    await expect(page.locator("input[name=username]")).to_be_visible()
    assert api_requests == []  # no API call before login, so a fresh visit logs no failed request
    return watched


async def _login(watched: Watched, user: str, password: str) -> None:
    page = watched.page
    await page.fill("input[name=username]", user)
    await page.fill("input[name=password]", password)
    await page.click("form.login button[type=submit]")
    await expect(page.locator("header")).to_contain_text(f"User {user}")


async def test_queue_binding_publish_get_and_topology_route(api: Api, browser: Browser) -> None:
    watched = await _open(api, browser)
    page = watched.page
    await _login(watched, "guest", "guest")
    await expect(page.locator("#totals")).to_contain_text("exchanges")
    await watched.shot("overview")

    await page.goto(page.url.split("#")[0] + "#/queues")
    form = page.locator("form[name=add-queue]")
    await form.locator("input[name=name]").fill("orders")
    await form.locator("button[type=submit]").click()
    await expect(form).to_contain_text("Queue orders added.")
    await expect(page.locator("table")).to_contain_text("orders")

    await page.goto(page.url.split("#")[0] + "#/exchanges/%2F/amq.topic")
    bind = page.locator("form[name=add-binding]")
    await bind.locator("input[name=destination]").fill("orders")
    await bind.locator("input[name=routing_key]").fill("order.*")
    await bind.locator("button[type=submit]").click()
    await expect(bind).to_contain_text("Bound.")
    await expect(page.locator("section", has_text="Bindings from this exchange")).to_contain_text("order.*")
    assert [b["routing_key"] for b in await api.json("/api/queues/%2F/orders/bindings")] == [
        "orders",
        "order.*",
    ]

    publish = page.locator("form[name=publish]")
    await publish.locator("input[name=routing_key]").fill("order.new")
    await publish.locator("textarea[name=payload]").fill("hello from the UI")
    await publish.locator("button[type=submit]").click()
    await expect(publish).to_contain_text("Message published.")

    await page.goto(page.url.split("#")[0] + "#/queues/%2F/orders")
    await expect(page.locator("#queue-ready")).to_have_text("1")
    get = page.locator("form[name=get-messages]")
    await get.locator("button[type=submit]").click()
    await expect(page.locator(".payload")).to_have_text("hello from the UI")
    await expect(page.locator(".message")).to_contain_text("routing key order.new")
    await watched.shot("queue")

    # Through the API: an alternate exchange, an exchange-to-exchange binding and a dead-letter exchange.
    for path, body in [
        ("/api/exchanges/%2F/unrouted", {"type": "fanout"}),
        ("/api/exchanges/%2F/events", {"type": "topic", "arguments": {"alternate-exchange": "unrouted"}}),
        ("/api/exchanges/%2F/dlx", {"type": "fanout"}),
        ("/api/queues/%2F/parked", {}),
        ("/api/queues/%2F/dead", {}),
        ("/api/queues/%2F/billing", {"arguments": {"x-dead-letter-exchange": "dlx"}}),
    ]:
        assert (await api.put(path, json=body)).status == 201
    for path, key in [
        ("/api/bindings/%2F/e/events/e/amq.topic", "order.#"),
        ("/api/bindings/%2F/e/events/q/billing", "invoice.*"),
        ("/api/bindings/%2F/e/unrouted/q/parked", ""),
        ("/api/bindings/%2F/e/dlx/q/dead", ""),
    ]:
        assert (await api.post(path, json={"routing_key": key})).status == 201
    await page.goto(page.url.split("#")[0] + "#/topology")
    await expect(
        page.locator('g.edge.alternate[data-source="e:events"][data-target="e:unrouted"]')
    ).to_be_visible()
    await expect(
        page.locator('g.edge.dead-letter[data-source="q:billing"][data-target="e:dlx"]')
    ).to_be_visible()
    edge = page.locator('g.edge[data-source="e:amq.topic"][data-target="q:orders"]')
    await expect(edge).to_contain_text("order.*")
    before = (await api.json("/api/queues/%2F/orders"))["messages"]  # 1: the get above requeued it
    route = page.locator("form[name=route]")
    await route.locator("select[name=exchange]").select_option("events")
    await route.locator("input[name=routing_key]").fill("order.paid")
    await route.locator("button[type=submit]").click()
    await expect(page.locator("#route-result")).to_have_text("→ orders")
    await expect(edge).to_have_class("edge binding hl")
    await expect(page.locator('g.node.hl[data-id="q:orders"]')).to_be_visible()
    await expect(page.locator('g.edge.hl[data-source="e:events"][data-target="e:amq.topic"]')).to_be_visible()
    assert await page.locator('g.node.hl[data-id="q:billing"]').count() == 0
    await watched.shot("topology")
    assert (await api.json("/api/queues/%2F/orders"))["messages"] == before  # the dry run enqueued nothing

    await page.locator('g.node[data-id="q:orders"]').click()
    await expect(page.locator("h1")).to_contain_text("Queue orders")
    await page.click("button[name=logout]")
    await expect(page.locator("input[name=username]")).to_be_visible()
    assert watched.errors == []


async def test_monitoring_user_sees_no_change_buttons(api: Api, browser: Browser) -> None:
    assert (await api.put("/api/users/watcher", json={"password": "pw", "tags": "monitoring"})).status == 201
    body = {"configure": ".*", "write": ".*", "read": ".*"}
    assert (await api.put("/api/permissions/%2F/watcher", json=body)).status == 201
    assert (await api.put("/api/queues/%2F/watched", json={})).status == 201
    watched = await _open(api, browser)
    page = watched.page
    await _login(watched, "watcher", "pw")
    await page.goto(page.url.split("#")[0] + "#/queues")
    await expect(page.locator("table")).to_contain_text("watched")
    assert await page.locator("form[name=add-queue]").count() == 0
    await page.goto(page.url.split("#")[0] + "#/queues/%2F/watched")
    await expect(page.locator("form[name=get-messages]")).to_be_visible()
    assert await page.locator("form[name=purge], form[name=delete-queue]").count() == 0
    await page.goto(page.url.split("#")[0] + "#/exchanges/%2F/amq.direct")
    await expect(page.locator("h1")).to_contain_text("amq.direct")
    assert await page.locator("form[name=publish], form[name=add-binding]").count() == 0
    assert watched.errors == []


async def test_wrong_password_shows_login_failed(api: Api, browser: Browser) -> None:
    watched = await _open(api, browser)
    page = watched.page
    await page.fill("input[name=username]", "guest")
    await page.fill("input[name=password]", "wrong")
    await page.click("form.login button[type=submit]")
    await expect(page.locator("form.login .error")).to_have_text("Login failed")
    # The browser logs the 401 of the login attempt itself; nothing else may fail.
    assert [e for e in watched.errors if "401" not in e] == []


async def test_a_vhost_of_1000_queues_and_5000_bindings_stays_responsive(api: Api, browser: Browser) -> None:
    vhost = api.server.broker.vhosts["/"]
    for exchange in range(10):
        vhost.declare_exchange(f"x{exchange}", "topic")
    for number in range(1000):
        vhost.declare_queue(f"q{number:04}", owner=None)
        for exchange in range(5):
            vhost.bind_queue(f"q{number:04}", f"x{(number + exchange) % 10}", f"k.{number}.#", None, None)
    watched = await _open(api, browser)
    page = watched.page
    await _login(watched, "guest", "guest")
    # Times are measured in the page and reported, never asserted (the machine is shared).
    await page.evaluate("window.__t0 = performance.now()")
    await page.goto(page.url.split("#")[0] + "#/queues")
    await expect(page.locator("table tbody tr")).to_have_count(100)  # one page of 100, not 1,000 rows
    queues_ms = await page.evaluate("performance.now() - window.__t0")
    await page.locator("input[name=filter]").fill("q099")
    await expect(page.locator("table tbody tr")).to_have_count(10)
    await page.evaluate("window.__t0 = performance.now()")
    await page.goto(page.url.split("#")[0] + "#/topology")
    await expect(page.locator("text=more objects not drawn")).to_be_visible(timeout=60_000)
    await expect(page.locator("g.node").first).to_be_visible(timeout=60_000)
    graph_ms = await page.evaluate("performance.now() - window.__t0")
    await page.locator("input[name=graph-filter]").fill("q0042")
    await expect(page.locator('g.node[data-id="q:q0042"]')).to_be_visible(timeout=30_000)
    assert await page.locator("g.node.queue").count() == 1  # the queue and its 5 exchanges, not the rest
    await watched.shot("topology-1000-queues")
    print(f"1000 queues / 5000 bindings: queues page {queues_ms:.0f} ms, capped graph {graph_ms:.0f} ms")
    assert watched.errors == []
