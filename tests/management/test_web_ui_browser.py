"""The web UI end to end in headless Chromium (the Debian package, never a downloaded browser), driven by
Playwright against a real broker and management port: log in, add a queue and a binding, publish and get a
message, see the binding's edge in the topology graph and a test key's highlighted path, follow a message's
history. Any JavaScript
console error or failed request fails the test; screenshots land in test-artifacts/ (and, with
WARRENMQ_README_SCREENSHOTS=1, refresh docs/images/)."""

from __future__ import annotations

import aio_pika
from playwright.async_api import Browser, expect

from tests.management.conftest import Api
from tests.management.ui_browser import BROWSER_MARKS, browser, login, open_ui, show

__all__ = ["browser"]  # the fixture

pytestmark = BROWSER_MARKS


async def test_queue_binding_publish_get_and_topology_route(api: Api, browser: Browser) -> None:
    watched = await open_ui(api, browser)
    page = watched.page
    await login(watched, "guest", "guest")
    await expect(page.locator("#totals")).to_contain_text("exchanges")
    await expect(page.locator('figure.chart[data-title="Message rates"]')).to_be_visible()
    await watched.shot("overview")

    # Message history is recorded only once switched on (as RabbitMQ's firehose): switch it on in the UI.
    await show(page, "#/messages")
    await expect(page.locator("main")).to_contain_text("Recording off")
    await page.click("button[name=history-switch]")
    await expect(page.locator("main")).to_contain_text("Recording on")

    await show(page, "#/queues")
    form = page.locator("form[name=add-queue]")
    await form.locator("input[name=name]").fill("orders")
    await form.locator("button[type=submit]").click()
    await expect(form).to_contain_text("Queue orders added.")
    await expect(page.locator("table")).to_contain_text("orders")

    await show(page, "#/exchanges/%2F/amq.topic")
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
    await publish.locator("input[name=message_id]").fill("ui-1")
    await publish.locator("textarea[name=payload]").fill("hello from the UI")
    await publish.locator("button[type=submit]").click()
    await expect(publish).to_contain_text("Message published.")

    await show(page, "#/queues/%2F/orders")
    await expect(page.locator("#queue-ready")).to_have_text("1")
    get = page.locator("form[name=get-messages]")
    await get.locator("button[type=submit]").click()
    await expect(page.locator(".payload")).to_have_text("hello from the UI")
    await expect(page.locator(".message")).to_contain_text("routing key order.new")
    await expect(page.locator('figure.chart[data-title="Queued messages"]')).to_be_visible()
    await watched.shot("queue", readme=True)

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
    await show(page, "#/topology")
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
    await watched.shot("topology", readme=True)
    assert (await api.json("/api/queues/%2F/orders"))["messages"] == before  # the dry run enqueued nothing

    await page.locator('g.node[data-id="q:orders"]').click()
    await expect(page.locator("h1")).to_contain_text("Queue orders")

    # A consumer (a real AMQP client) takes the message and acks it; its history shows the whole path.
    connection = await aio_pika.connect(api.amqp_url)
    async with connection:
        channel = await connection.channel()
        incoming = await (await channel.get_queue("orders")).get(timeout=5)
        assert incoming is not None
        assert incoming.message_id == "ui-1"
        await incoming.ack()
        await channel.get_queue("orders")  # a round trip: the ack has been handled
    await show(page, "#/messages?message_id=ui-1")
    history = page.locator('.history[data-id="ui-1"]')
    await expect(history.locator("li.step")).to_have_count(7)
    steps = history.locator("li.step")
    await expect(steps.nth(0)).to_contain_text('published to amq.topic with routing key "order.new"')
    await expect(steps.nth(1)).to_contain_text("routed to orders")
    await expect(steps.nth(1)).to_contain_text('amq.topic → orders (binding key "order.*")')
    # The UI's own get (nack, requeue true), then the AMQP client's.
    await expect(steps.nth(2)).to_contain_text("delivered from orders to basic.get")
    await expect(steps.nth(3)).to_contain_text("nacked in orders, requeued")
    await expect(steps.nth(4)).to_contain_text("requeued in orders")
    await expect(steps.nth(5)).to_contain_text("delivered from orders to basic.get (redelivered)")
    await expect(steps.nth(6)).to_contain_text("acked in orders")
    await expect(history.locator(".outcome")).to_have_text("acked")
    await watched.shot("messages", readme=True)
    await page.click("button[name=logout]")
    await expect(page.locator("input[name=username]")).to_be_visible()
    assert watched.errors == []


async def test_monitoring_user_sees_no_change_buttons(api: Api, browser: Browser) -> None:
    assert (await api.put("/api/users/watcher", json={"password": "pw", "tags": "monitoring"})).status == 201
    body = {"configure": ".*", "write": ".*", "read": ".*"}
    assert (await api.put("/api/permissions/%2F/watcher", json=body)).status == 201
    assert (await api.put("/api/queues/%2F/watched", json={})).status == 201
    watched = await open_ui(api, browser)
    page = watched.page
    await login(watched, "watcher", "pw")
    await show(page, "#/queues")
    await expect(page.locator("table")).to_contain_text("watched")
    assert await page.locator("form[name=add-queue]").count() == 0
    await show(page, "#/queues/%2F/watched")
    await expect(page.locator("form[name=get-messages]")).to_be_visible()
    assert await page.locator("form[name=purge], form[name=delete-queue]").count() == 0
    await show(page, "#/exchanges/%2F/amq.direct")
    await expect(page.locator("h1")).to_contain_text("amq.direct")
    assert await page.locator("form[name=publish], form[name=add-binding]").count() == 0
    assert watched.errors == []


async def test_wrong_password_shows_login_failed(api: Api, browser: Browser) -> None:
    watched = await open_ui(api, browser)
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
    watched = await open_ui(api, browser)
    page = watched.page
    await login(watched, "guest", "guest")
    # Times are measured in the page and reported, never asserted (the machine is shared).
    await page.evaluate("window.__t0 = performance.now()")
    await show(page, "#/queues")
    await expect(page.locator("table tbody tr")).to_have_count(100)  # one page of 100, not 1,000 rows
    queues_ms = await page.evaluate("performance.now() - window.__t0")
    await page.locator("input[name=filter]").fill("q099")
    await expect(page.locator("table tbody tr")).to_have_count(10)
    await page.evaluate("window.__t0 = performance.now()")
    await show(page, "#/topology")
    await expect(page.locator("text=more objects not drawn")).to_be_visible(timeout=60_000)
    await expect(page.locator("g.node").first).to_be_visible(timeout=60_000)
    graph_ms = await page.evaluate("performance.now() - window.__t0")
    await page.locator("input[name=graph-filter]").fill("q0042")
    await expect(page.locator('g.node[data-id="q:q0042"]')).to_be_visible(timeout=30_000)
    assert await page.locator("g.node.queue").count() == 1  # the queue and its 5 exchanges, not the rest
    await watched.shot("topology-1000-queues")
    print(f"1000 queues / 5000 bindings: queues page {queues_ms:.0f} ms, capped graph {graph_ms:.0f} ms")
    assert watched.errors == []


async def test_a_route_followed_before_the_shell_subscribes_is_shown(api: Api, browser: Browser) -> None:
    """Preact runs effects after the next frame; with frames held back (a busy machine), the hash changes
    before the shell listens for hashchange. The shell must still show the route, not stay on the overview."""
    assert (await api.put("/api/queues/%2F/watched", json={})).status == 201
    watched = await open_ui(api, browser)
    page = watched.page
    await page.evaluate("window.requestAnimationFrame = (step) => setTimeout(step, 1000)")
    await login(watched, "guest", "guest")
    await show(page, "#/queues")
    await expect(page.locator("table")).to_contain_text("watched")
    assert watched.errors == []
