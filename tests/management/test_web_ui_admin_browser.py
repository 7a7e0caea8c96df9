"""The web UI's admin and detail screens in headless Chromium against a real broker: users (add, tags,
password, delete), permissions and topic permissions (set, clear), user and vhost limits, policies (add with
a definition, delete), with the API's refusals shown to the user; connection and channel pages of a real
AMQP client; binding from a queue's page; a stream queue's page; the rate charts and the topology's edge
widths drawn from the sampler's samples (on a manual clock). Any JavaScript console error or failed request
fails a test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aio_pika
import pytest
from aiohttp.test_utils import TestClient, TestServer
from playwright.async_api import Browser, expect

from broker.config import ServerConfig
from broker.core.model.clock import ManualClock
from broker.management.api.app import build_app
from broker.management.context import ManagementContext
from broker.node import build_node
from tests.management.conftest import Api
from tests.management.ui_browser import BROWSER_MARKS, browser, login, open_ui, show

__all__ = ["browser"]  # the fixture
pytestmark = BROWSER_MARKS
BAD_REQUEST = "console: Failed to load resource: the server responded with a status of 400 (Bad Request)"


async def test_users_permissions_limits_and_the_api_errors(api: Api, browser: Browser) -> None:
    watched = await open_ui(api, browser)
    page = watched.page
    await login(watched, "guest", "guest")
    await show(page, "#/users")
    add = page.locator("form[name=add-user]")
    await add.locator("input[name=username]").fill("alice")
    await add.locator("input[name=password]").fill("pw1")
    await add.locator("input[name=tags]").fill("monitoring")
    await add.locator("button[type=submit]").click()
    await expect(add).to_contain_text("User alice added.")
    await page.click("a[href='#/users/alice']")
    await expect(page.locator("#user-tags")).to_have_text("Tags: monitoring")

    grant = page.locator("form[name=set-permission]")
    await grant.locator("select[name=vhost]").select_option("/")
    await grant.locator("input[name=write]").fill("^orders$")
    await grant.locator("button[type=submit]").click()
    await expect(grant).to_contain_text("Permission set.")
    permissions = page.locator("section", has_text="Permissions").first
    await expect(permissions.locator("table")).to_contain_text("^orders$")
    assert (await api.json("/api/permissions/%2F/alice"))["write"] == "^orders$"
    topic = page.locator("form[name=set-topic-permission]")
    await topic.locator("input[name=read]").fill("^news\\.")
    await topic.locator("button[type=submit]").click()
    await expect(topic).to_contain_text("Topic permission set.")
    topics = await api.json("/api/topic-permissions/%2F/alice")
    assert [(t["exchange"], t["read"]) for t in topics] == [("amq.topic", "^news\\.")]

    limit = page.locator("form[name=set-limit]")
    await limit.locator("input[name=value]").fill("many")
    await limit.locator("button[type=submit]").click()
    await expect(limit.locator(".error")).to_contain_text("400")  # the API's refusal, shown
    await limit.locator("input[name=value]").fill("5")
    await limit.locator("button[type=submit]").click()
    await expect(limit).to_contain_text("Limit set.")
    assert await api.json("/api/user-limits/alice") == [{"user": "alice", "value": {"max-connections": 5}}]
    await page.click("button[name=clear-limit-max-connections]")
    await expect(page.locator("section", has_text="Limits")).to_contain_text("No limits.")

    # Tags change and the password stays (the form sends the current hash back).
    update = page.locator("form[name=update-user]")
    await update.locator("input[name=tags]").fill("management")
    await update.locator("button[type=submit]").click()
    await expect(update).to_contain_text("Tags saved.")
    await expect(page.locator("#user-tags")).to_have_text("Tags: management")
    assert (await api.get("/api/whoami", user=("alice", "pw1"))).status == 200
    await update.locator("input[name=password]").fill("pw2")
    await update.locator("button[type=submit]").click()
    await expect(update).to_contain_text("Password changed, tags saved.")
    assert (await api.get("/api/whoami", user=("alice", "pw2"))).status == 200

    await page.click("button[name=clear-permission]")
    await expect(permissions).to_contain_text("No permissions.")
    page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    await page.locator("form[name=delete-user] button[type=submit]").click()
    await expect(page.locator("h1")).to_have_text("Users")
    await expect(page.locator("table")).not_to_contain_text("alice")
    assert (await api.get("/api/users/alice")).status == 404
    assert watched.errors == [BAD_REQUEST]  # the browser logs the one refused request; nothing else failed


async def test_policies_and_vhost_limits(api: Api, browser: Browser) -> None:
    watched = await open_ui(api, browser)
    page = watched.page
    await login(watched, "guest", "guest")
    await show(page, "#/policies")
    form = page.locator("form[name=add-policy]")
    await form.locator("input[name=name]").fill("cap")
    await form.locator("input[name=pattern]").fill("^orders")
    await form.locator("select[name=apply-to]").select_option("queues")
    await form.locator("textarea[name=definition]").fill('{"max-length": "lots"}')
    await form.locator("button[type=submit]").click()
    await expect(form.locator(".error")).to_contain_text("400")  # RabbitMQ's validation text, shown
    await form.locator("textarea[name=definition]").fill('{"max-length": 10}')
    await form.locator("button[type=submit]").click()
    await expect(form).to_contain_text("Policy cap set.")
    await expect(page.locator("table")).to_contain_text('{"max-length":10}')
    policy = await api.json("/api/policies/%2F/cap")
    assert (policy["apply-to"], policy["definition"]) == ("queues", {"max-length": 10})
    await page.click("button[name=delete-policy]")
    await expect(page.locator("main")).to_contain_text("No policies.")
    assert await api.json("/api/policies/%2F") == []

    await show(page, "#/vhosts")
    add = page.locator("form[name=add-vhost]")
    await add.locator("input[name=name]").fill("dev")
    await add.locator("button[type=submit]").click()
    await expect(page.locator("table")).to_contain_text("dev")
    await page.click("a[href='#/vhosts/dev']")
    await expect(page.locator("h1")).to_contain_text("Virtual host dev")
    limit = page.locator("form[name=set-limit]")
    await limit.locator("select[name=limit]").select_option("max-queues")
    await limit.locator("input[name=value]").fill("3")
    await limit.locator("button[type=submit]").click()
    await expect(page.locator("section", has_text="Limits").locator("table")).to_contain_text("max-queues")
    assert await api.json("/api/vhost-limits/dev") == [{"vhost": "dev", "value": {"max-queues": 3}}]
    await watched.shot("vhost")
    assert watched.errors == [BAD_REQUEST]  # the refused policy


async def _ignore(message: aio_pika.abc.AbstractIncomingMessage) -> None:
    """A consumer that leaves its deliveries unacked."""


async def test_connection_and_channel_pages_and_a_stream(api: Api, browser: Browser) -> None:
    args = {"x-queue-type": "stream", "x-max-age": "1D"}
    assert (await api.put("/api/queues/%2F/events", json={"durable": True, "arguments": args})).status == 201
    assert (await api.put("/api/queues/%2F/work", json={})).status == 201
    connection = await aio_pika.connect(api.amqp_url, client_properties={"connection_name": "ui-client"})
    async with connection:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=7)
        await (await channel.get_queue("work")).consume(_ignore, consumer_tag="c-ui")
        watched = await open_ui(api, browser)
        page = watched.page
        await login(watched, "guest", "guest")
        await show(page, "#/connections")
        await page.locator("table a").first.click()
        await expect(page.locator("h1")).to_contain_text("Connection")
        await expect(page.locator("#connection-facts")).to_contain_text("ui-client")
        await page.locator("section:has(h2:text-is('Channels'))").locator("table a").first.click()
        await expect(page.locator("h1")).to_contain_text("Channel")
        await expect(page.locator("#channel-facts")).to_contain_text("7")
        consumers = page.locator("section", has_text="Consumers")
        await expect(consumers).to_contain_text("c-ui")
        await consumers.locator("a", has_text="work").click()
        await expect(page.locator("h1")).to_contain_text("Queue work")
        bind = page.locator("form[name=bind-queue]")  # bind and unbind from the queue's page
        await bind.locator("input[name=source]").fill("amq.direct")
        await bind.locator("input[name=routing_key]").fill("jobs")
        await bind.locator("button[type=submit]").click()
        await expect(bind).to_contain_text("Bound.")
        bindings = page.locator("section:has(h2:text-is('Bindings')) table")
        await expect(bindings).to_contain_text("jobs")
        assert [b["routing_key"] for b in await api.json("/api/queues/%2F/work/bindings")] == ["work", "jobs"]
        await bindings.locator("button[name=unbind]").click()
        await expect(bindings).not_to_contain_text("jobs")
        assert [b["routing_key"] for b in await api.json("/api/queues/%2F/work/bindings")] == ["work"]
        await show(page, "#/queues/%2F/events")
        await expect(page.locator("#stream-info")).to_contain_text("stream")
        await expect(page.locator("#stream-info")).to_contain_text("x-max-age")
        await show(page, "#/channels")
        await page.locator("table a").first.click()
        await expect(page.locator("h1")).to_contain_text("Channel")
    assert watched.errors == []


@pytest.fixture
async def clocked_api() -> AsyncIterator[tuple[Api, ManualClock]]:
    clock = ManualClock(start_ms=1_700_000_000_000)
    config = ServerConfig(host="127.0.0.1", port=0, management_port=None)
    server = build_node(config, asyncio.get_running_loop(), clock=clock)
    await server.start()
    context = ManagementContext(server, node="warrenmq@testhost")
    client: TestClient[Any, Any] = TestClient(TestServer(build_app(context)))
    await client.start_server()
    context.http_port = client.port or 0
    try:
        yield Api(client, server, context), clock
    finally:
        await client.close()
        await server.stop(grace_s=0.5)


async def test_rate_charts_draw_the_sampled_rates(
    clocked_api: tuple[Api, ManualClock], browser: Browser
) -> None:
    api, clock = clocked_api
    connection = await aio_pika.connect(api.amqp_url)
    async with connection:
        channel = await connection.channel()
        exchange = await channel.declare_exchange("rx", aio_pika.ExchangeType.DIRECT)
        queue = await channel.declare_queue("rq")
        await queue.bind(exchange, "k")
        for step in range(3):
            clock.advance(api.context.sampler.interval_s)
            for index in range(10 * (step + 1)):
                await exchange.publish(aio_pika.Message(str(index).encode()), routing_key="k")
            await channel.declare_queue("rq", passive=True)  # a round trip: every publish handled
        clock.advance(api.context.sampler.interval_s)
        watched = await open_ui(api, browser)
        page = watched.page
        await login(watched, "guest", "guest")
        await show(page, "#/queues/%2F/rq")
        rates = page.locator('figure.chart[data-title="Message rates"]')
        await expect(rates.locator('polyline[data-label="Publish"]')).to_have_count(1)
        await expect(rates.locator("ul.legend")).to_contain_text("Publish 6")  # 30 in the last 5 s
        lengths = page.locator('figure.chart[data-title="Queued messages"]')
        await expect(lengths.locator("ul.legend")).to_contain_text("Ready 60")
        await watched.shot("queue-charts", readme=True)
        await show(page, "#/exchanges/%2F/rx")
        exchange_rates = page.locator('figure.chart[data-title="Message rates"]')
        await expect(exchange_rates.locator('polyline[data-label="Publish (in)"]')).to_have_count(1)
        await show(page, "#/")
        await expect(page.locator('figure.chart[data-title="Message rates"] polyline')).not_to_have_count(0)
        await expect(page.locator('figure.chart[data-title="Queued messages"] polyline')).not_to_have_count(0)
        await watched.shot("overview-traffic", readme=True)
        # The topology draws the edge as thick as its live rate (6/s: 1.5 + log2(7) px).
        await show(page, "#/topology")
        edge = page.locator('g.edge[data-source="e:rx"][data-target="q:rq"]')
        await expect(edge).to_have_attribute("data-rate", "6.0")
        width = await edge.locator("polyline").evaluate("e => getComputedStyle(e).strokeWidth")
        assert width == "4.30735px"
    assert watched.errors == []
