"""message_stats, *_details rates, queue_totals, churn_rates and the samples windows, driven by a real
aio-pika client, on a ManualClock: N publishes in T seconds give rate N/T on every object that shows it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aio_pika
import pytest
from aiohttp.test_utils import TestClient, TestServer

from broker.config import ServerConfig
from broker.core.model.clock import ManualClock
from broker.management.api.app import build_app
from broker.management.context import ManagementContext
from broker.node import build_node
from tests.management.conftest import Api

T0_MS = 1_700_000_000_000  # ManualClock's epoch, a multiple of every sampling interval used here


async def _api(clock: ManualClock, interval_ms: int = 5000) -> tuple[Api, Any]:
    config = ServerConfig(
        host="127.0.0.1", port=0, management_port=None, collect_statistics_interval_ms=interval_ms
    )
    server = build_node(config, asyncio.get_running_loop(), clock=clock)
    await server.start()
    context = ManagementContext(server, node="warrenmq@testhost")
    client: TestClient[Any, Any] = TestClient(TestServer(build_app(context)))
    await client.start_server()
    return Api(client, server, context), client


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start_ms=T0_MS)


@pytest.fixture
async def stats_api(clock: ManualClock) -> AsyncIterator[Api]:
    api, client = await _api(clock)
    try:
        yield api
    finally:
        await client.close()
        await api.server.stop(grace_s=0.5)


async def _traffic(api: Api, clock: ManualClock, publishes: int, gets: int) -> dict[str, Any]:
    """Publish ``publishes`` messages (confirmed) and basic.get + ack ``gets`` of them between two samples
    ``interval`` apart; returns the connection's row at the first sample."""
    connection = await aio_pika.connect(api.amqp_url)
    channel = await connection.channel()
    exchange = await channel.declare_exchange("sx", aio_pika.ExchangeType.DIRECT)
    queue = await channel.declare_queue("sq")
    await queue.bind(exchange, "k")
    clock.advance(api.context.sampler.interval_s)  # the baseline sample
    [before] = await api.json("/api/connections")
    for index in range(publishes):
        await exchange.publish(aio_pika.Message(str(index).encode()), routing_key="k")
    for _ in range(gets):
        message = await queue.get(no_ack=False)
        await message.ack()
    await channel.declare_queue("sq", passive=True)  # a round trip: every ack above has been handled
    clock.advance(api.context.sampler.interval_s)
    api.test_connection = connection  # type: ignore[attr-defined]
    return dict(before)


def _rate(stats: dict[str, Any], name: str) -> float:
    return float(stats[f"{name}_details"]["rate"])


async def test_n_publishes_in_t_seconds_give_rate_n_over_t_on_every_object(
    stats_api: Api, clock: ManualClock
) -> None:
    api = stats_api
    before = await _traffic(api, clock, publishes=40, gets=10)
    try:
        queue = await api.json("/api/queues/%2F/sq")
        assert queue["message_stats"]["publish"] == 40
        assert _rate(queue["message_stats"], "publish") == pytest.approx(8.0)
        for name in ("get", "ack", "deliver_get"):
            assert queue["message_stats"][name] == 10
            assert _rate(queue["message_stats"], name) == pytest.approx(2.0)
        assert queue["message_stats"]["deliver"] == 0
        assert queue["messages"] == 30
        assert _rate(queue, "messages") == pytest.approx(6.0)  # 0 -> 30 in 5 s
        assert _rate(queue, "messages_ready") == pytest.approx(6.0)

        exchange = await api.json("/api/exchanges/%2F/sx")
        assert exchange["message_stats"]["publish_in"] == 40
        assert exchange["message_stats"]["publish_out"] == 40
        assert _rate(exchange["message_stats"], "publish_in") == pytest.approx(8.0)
        assert _rate(exchange["message_stats"], "publish_out") == pytest.approx(8.0)

        [channel] = await api.json("/api/channels")
        assert channel["message_stats"]["publish"] == 40
        assert channel["message_stats"]["confirm"] == 40
        assert _rate(channel["message_stats"], "publish") == pytest.approx(8.0)
        assert _rate(channel["message_stats"], "confirm") == pytest.approx(8.0)
        assert _rate(channel["message_stats"], "get") == pytest.approx(2.0)

        vhost = await api.json("/api/vhosts/%2F")
        overview = await api.json("/api/overview")
        for stats in (vhost["message_stats"], overview["message_stats"]):
            assert stats["publish"] == 40
            assert _rate(stats, "publish") == pytest.approx(8.0)
            assert _rate(stats, "ack") == pytest.approx(2.0)
        assert _rate(vhost, "messages") == pytest.approx(6.0)
        assert _rate(overview["queue_totals"], "messages") == pytest.approx(6.0)

        [after] = await api.json("/api/connections")
        assert after["recv_cnt"] > before["recv_cnt"]
        assert _rate(after, "recv_oct") == pytest.approx((after["recv_oct"] - before["recv_oct"]) / 5)
        assert _rate(after, "send_oct") == pytest.approx((after["send_oct"] - before["send_oct"]) / 5)
        assert _rate(after, "send_oct") > 0
    finally:
        await api.test_connection.close()  # type: ignore[attr-defined]


async def test_churn_rates_count_connections_channels_and_queues(stats_api: Api, clock: ManualClock) -> None:
    api = stats_api
    await _traffic(api, clock, publishes=1, gets=0)
    await api.test_connection.close()  # type: ignore[attr-defined]
    churn = (await api.json("/api/overview"))["churn_rates"]
    assert churn["connection_created"] == 1
    assert churn["channel_created"] == 1
    assert churn["queue_created"] == 1
    assert churn["queue_declared"] == 2  # the declare and the passive redeclare
    assert _rate(churn, "queue_declared") == pytest.approx(1 / 5)  # the passive one fell in the window
    for _ in range(100):
        churn = (await api.json("/api/overview"))["churn_rates"]
        if churn["connection_closed"] == 1:
            break
        await asyncio.sleep(0.01)
    assert churn["connection_closed"] == 1
    assert churn["channel_closed"] == 1
    # The closed channel's counts stay in the vhost's and the node's totals.
    assert (await api.json("/api/overview"))["message_stats"]["publish"] == 1
    assert (await api.json("/api/vhosts/%2F"))["message_stats"]["publish"] == 1


async def test_lengths_and_msg_rates_windows_return_samples(stats_api: Api, clock: ManualClock) -> None:
    api = stats_api
    await _traffic(api, clock, publishes=20, gets=0)
    try:
        queue = await api.json(
            "/api/queues/%2F/sq?lengths_age=10&lengths_incr=5&msg_rates_age=10&msg_rates_incr=5"
        )
        now = T0_MS + 10_000
        # The queue was declared after the t=0 sample: its history starts at the t=5 s sample.
        assert queue["messages_details"]["samples"] == [
            {"sample": 20, "timestamp": now},
            {"sample": 0, "timestamp": now - 5000},
        ]
        assert queue["messages_details"]["avg"] == pytest.approx(10.0)
        assert queue["messages_details"]["avg_rate"] == pytest.approx(4.0)
        assert queue["messages_details"]["rate"] == pytest.approx(4.0)
        publish = queue["message_stats"]["publish_details"]
        assert [s["sample"] for s in publish["samples"]] == [20, 0]
        assert set(publish) == {"avg", "avg_rate", "rate", "samples"}
        plain = await api.json("/api/queues/%2F/sq")
        assert plain["messages_details"] == {"rate": pytest.approx(4.0)}
    finally:
        await api.test_connection.close()  # type: ignore[attr-defined]


async def test_collect_statistics_interval_sets_the_sampling_period(clock: ManualClock) -> None:
    api, client = await _api(clock, interval_ms=2000)
    try:
        assert api.context.sampler.interval_s == 2.0
        await _traffic(api, clock, publishes=10, gets=0)
        queue = await api.json("/api/queues/%2F/sq")
        assert _rate(queue["message_stats"], "publish") == pytest.approx(5.0)  # 10 in 2 s
        await api.test_connection.close()  # type: ignore[attr-defined]
    finally:
        await client.close()
        await api.server.stop(grace_s=0.5)
