"""The overview's "Queued messages" chart draws what its legend says, in headless Chromium against a real
broker: with 100 messages left unacknowledged by a consumer, the line's newest point is the legend's count
(non-zero) at the same render, not the count of a sample taken before the messages arrived."""

from __future__ import annotations

import asyncio

import aio_pika
from playwright.async_api import Browser, Locator, expect

from tests.management.conftest import Api
from tests.management.ui_browser import BROWSER_MARKS, browser, login, open_ui, show

__all__ = ["browser"]  # the fixture

pytestmark = BROWSER_MARKS
CHART = 'figure.chart[data-title="Queued messages"]'
# Two samples make a line; the sampler takes one every collect_statistics_interval (5 s) from the start.
LINE_TIMEOUT_MS = 30_000


async def _drawn(chart: Locator, label: str) -> list[float]:
    values = await chart.locator(f'polyline[data-label="{label}"]').get_attribute("data-values")
    assert values is not None
    return [float(value) for value in values.split()]


async def _legend(chart: Locator, label: str) -> str:
    return await chart.locator(".legend li", has_text=label).locator("b").inner_text()


async def test_queued_messages_chart_ends_at_its_legend(api: Api, browser: Browser) -> None:
    watched = await open_ui(api, browser)
    page = watched.page
    await login(watched, "guest", "guest")
    chart = page.locator(CHART)
    # The chart has a line (two samples) before any message exists: its points so far are all 0.
    await expect(chart.locator('polyline[data-label="Total"]')).to_have_count(1, timeout=LINE_TIMEOUT_MS)
    assert set(await _drawn(chart, "Total")) == {0.0}

    connection = await aio_pika.connect(api.amqp_url)
    try:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=0)
        queue = await channel.declare_queue("chart-unacked")
        for index in range(100):
            await channel.default_exchange.publish(aio_pika.Message(str(index).encode()), "chart-unacked")
        received: list[aio_pika.abc.AbstractIncomingMessage] = []

        async def hold(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            received.append(message)  # never acked: 100 unacknowledged

        await queue.consume(hold)
        deadline = asyncio.get_running_loop().time() + 30
        while (await api.json("/api/queues/%2F/chart-unacked"))["messages_unacknowledged"] != 100:
            assert asyncio.get_running_loop().time() < deadline, "the deliveries did not arrive"
            await asyncio.sleep(0.05)
        # A fresh render of the overview: the legend and the line come from one response.
        await show(page, "#/queues")
        await show(page, "#/overview")
        await expect(chart.locator(".legend li", has_text="Total")).to_contain_text("100")
        await expect(chart.locator('polyline[data-label="Total"]')).to_have_count(1)
        total = await _drawn(chart, "Total")
        unacked = await _drawn(chart, "Unacked")
        await watched.shot("overview-queued-messages")
        assert await _legend(chart, "Total") == "100"
        assert await _legend(chart, "Unacked") == "100"
        assert total[-1] == 100.0, total
        assert unacked[-1] == 100.0, unacked
        assert await _drawn(chart, "Ready") == [0.0] * len(total)
    finally:
        await connection.close()
    assert watched.errors == []
