"""/api/warrenmq/message-history/{vhost}, the UI's #/messages: with recording on, a message published by a
real client (aio-pika) is found by message id, correlation id or routing key, with its path (hops through an
exchange-to-exchange binding, the queues, the consumer, the ack), and a rejected one with its
dead-lettering."""

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
from broker.management.api.message_history import history_of
from broker.management.context import ManagementContext
from broker.node import build_node
from tests.management.conftest import Api

HISTORY = "/api/warrenmq/message-history/%2F"


async def _declare(api: Api) -> None:
    for path, body in [
        ("/api/exchanges/%2F/front", {"type": "direct"}),
        ("/api/exchanges/%2F/orders-x", {"type": "topic"}),
        ("/api/exchanges/%2F/dlx", {"type": "fanout"}),
        ("/api/queues/%2F/orders", {"arguments": {"x-dead-letter-exchange": "dlx"}}),
        ("/api/queues/%2F/dead", {}),
    ]:
        assert (await api.put(path, json=body)).status == 201
    for path, key in [
        ("/api/bindings/%2F/e/front/e/orders-x", "order.new"),
        ("/api/bindings/%2F/e/orders-x/q/orders", "order.*"),
        ("/api/bindings/%2F/e/dlx/q/dead", ""),
    ]:
        assert (await api.post(path, json={"routing_key": key})).status == 201


async def _wait_for_steps(api: Api, query: str, steps: list[str]) -> dict[str, Any]:
    """The one message the query finds, once its steps are ``steps`` (the consumer acks asynchronously)."""
    for _ in range(200):
        found = (await api.json(f"{HISTORY}?{query}"))["messages"]
        if len(found) == 1 and [step["step"] for step in found[0]["steps"]] == steps:
            return dict(found[0])
        await asyncio.sleep(0.01)
    raise AssertionError(f"never reached {steps}: {found}")


async def test_recording_is_off_until_an_administrator_turns_it_on(api: Api) -> None:
    assert await api.json(HISTORY) == {"enabled": False, "capacity": 1000, "messages": []}
    assert api.server.broker.events.hot_observers == []  # nothing on the hot path while off
    assert (await api.put("/api/users/watcher", json={"password": "pw", "tags": "monitoring"})).status == 201
    refused = await api.put(HISTORY, json={"enabled": True}, user=("watcher", "pw"))
    assert refused.status == 401  # RabbitMQ answers not_authorised with 401
    bad = await api.put(HISTORY, json={"enabled": "yes"})
    assert bad.status == 400
    assert (await bad.json())["reason"] == "enabled must be true or false"
    assert (await api.put(HISTORY, json={"enabled": True})).status == 204
    assert (await api.json(HISTORY))["enabled"] is True
    assert (await api.put(HISTORY, json={"enabled": False})).status == 204
    assert api.server.broker.events.hot_observers == []


async def test_a_consumed_message_shows_its_hops_queue_consumer_and_ack(api: Api) -> None:
    await _declare(api)
    assert (await api.put(HISTORY, json={"enabled": True})).status == 204
    connection = await aio_pika.connect(api.amqp_url)
    async with connection:
        channel = await connection.channel()
        front = await channel.get_exchange("front")
        message = aio_pika.Message(b"{}", message_id="m-1", correlation_id="c-1")
        await front.publish(message, routing_key="order.new")
        await front.publish(aio_pika.Message(b"other", message_id="m-2"), routing_key="order.new")
        queue = await channel.get_queue("orders")
        for _ in range(2):
            incoming = await queue.get(timeout=5)
            assert incoming is not None
            await incoming.ack()
        found = await _wait_for_steps(api, "message_id=m-1", ["published", "routed", "delivered", "acked"])
    assert found["exchange"] == "front"
    assert found["routing_key"] == "order.new"
    assert found["properties"] == {"message_id": "m-1", "correlation_id": "c-1"}
    published, routed, delivered, acked = found["steps"]
    assert routed["queues"] == ["orders"]
    assert [(hop["source"], hop["destination"], hop["binding_keys"]) for hop in routed["hops"]] == [
        ("front", "orders-x", ["order.new"]),
        ("orders-x", "orders", ["order.*"]),
    ]
    assert [(hop["destination_type"], hop["alternate"]) for hop in routed["hops"]] == [
        ("exchange", False),
        ("queue", False),
    ]
    assert delivered["queue"] == "orders"
    assert delivered["redelivered"] is False
    assert acked["queue"] == "orders"
    assert published["at"] <= routed["at"] <= delivered["at"] <= acked["at"]
    by_correlation = (await api.json(f"{HISTORY}?correlation_id=c-1"))["messages"]
    assert [m["properties"]["message_id"] for m in by_correlation] == ["m-1"]
    by_key = (await api.json(f"{HISTORY}?routing_key=order.new"))["messages"]
    assert [m["properties"]["message_id"] for m in by_key] == ["m-2", "m-1"]  # newest first
    assert (await api.json(f"{HISTORY}?routing_key=nope"))["messages"] == []


async def test_a_rejected_message_shows_where_it_was_dead_lettered(api: Api) -> None:
    await _declare(api)
    assert (await api.put(HISTORY, json={"enabled": True})).status == 204
    connection = await aio_pika.connect(api.amqp_url)
    async with connection:
        channel = await connection.channel()
        front = await channel.get_exchange("front")
        await front.publish(aio_pika.Message(b"bad", message_id="m-bad"), routing_key="order.new")
        incoming = await (await channel.get_queue("orders")).get(timeout=5)
        assert incoming is not None
        await incoming.reject(requeue=False)
        steps = ["published", "routed", "delivered", "nacked", "dead_lettered"]
        found = await _wait_for_steps(api, "message_id=m-bad", steps)
    assert found["steps"][3]["requeue"] is False
    assert {k: found["steps"][4][k] for k in ("queue", "reason", "exchange", "queues")} == {
        "queue": "orders",
        "reason": "rejected",
        "exchange": "dlx",
        "queues": ["dead"],
    }


async def test_a_message_published_over_http_is_recorded_and_capacity_bounds_the_history(api: Api) -> None:
    await _declare(api)
    assert (await api.put(HISTORY, json={"enabled": True})).status == 204
    history_of(api.context.broker).capacity = 3  # one recorder per broker
    for number in range(5):
        body = {
            "routing_key": "order.new",
            "payload": str(number),
            "payload_encoding": "string",
            "properties": {"message_id": f"h-{number}"},
        }
        assert (await api.post("/api/exchanges/%2F/front/publish", json=body)).status == 200
    found = (await api.json(HISTORY))["messages"]
    assert [m["properties"]["message_id"] for m in found] == ["h-4", "h-3", "h-2"]
    assert [step["step"] for step in found[0]["steps"]] == ["published", "routed"]
    assert found[0]["steps"][0]["connection"] == "HTTP API"


@pytest.mark.parametrize("limit", ["0", "x", "1001"])
async def test_a_bad_limit_is_400(api: Api, limit: str) -> None:
    assert (await api.get(f"{HISTORY}?limit={limit}")).status == 400


async def test_gets_over_http_show_as_basic_get_deliveries_settled_by_the_ack_mode(api: Api) -> None:
    await _declare(api)
    assert (await api.put(HISTORY, json={"enabled": True})).status == 204
    for number in range(3):
        body = {
            "routing_key": "order.new",
            "payload": "x",
            "payload_encoding": "string",
            "properties": {"message_id": f"g-{number}"},
        }
        assert (await api.post("/api/exchanges/%2F/front/publish", json=body)).status == 200
    for ackmode in ("ack_requeue_true", "ack_requeue_false", "ack_requeue_false", "reject_requeue_false"):
        get: dict[str, Any] = {"count": 1, "ackmode": ackmode, "encoding": "auto"}
        assert (await api.post("/api/queues/%2F/orders/get", json=get)).status == 200
    found = {m["properties"]["message_id"]: m["steps"] for m in (await api.json(HISTORY))["messages"]}
    names = {key: [step["step"] for step in steps] for key, steps in found.items()}
    assert names == {
        # nacked with requeue, then taken again (redelivered) with auto-ack
        "g-0": ["published", "routed", "delivered", "nacked", "requeued", "delivered", "acked"],
        "g-1": ["published", "routed", "delivered", "acked"],
        # rejected: the queue's dead-letter exchange takes it
        "g-2": ["published", "routed", "delivered", "nacked", "dead_lettered"],
    }
    first, again = found["g-0"][2], found["g-0"][5]
    assert (first["consumer_tag"], first["redelivered"], again["redelivered"]) == (None, False, True)
    assert found["g-2"][4]["queues"] == ["dead"]


async def test_hops_name_the_default_exchange_key_and_the_alternate_exchange(api: Api) -> None:
    for path, body in [
        ("/api/exchanges/%2F/ae", {"type": "fanout"}),
        ("/api/exchanges/%2F/main", {"type": "direct", "arguments": {"alternate-exchange": "ae"}}),
        ("/api/queues/%2F/lost", {}),
    ]:
        assert (await api.put(path, json=body)).status == 201
    assert (await api.post("/api/bindings/%2F/e/ae/q/lost", json={"routing_key": ""})).status == 201
    assert (await api.put(HISTORY, json={"enabled": True})).status == 204
    connection = await aio_pika.connect(api.amqp_url)
    async with connection:
        channel = await connection.channel()
        await channel.default_exchange.publish(aio_pika.Message(b"", message_id="d"), routing_key="lost")
        main = await channel.get_exchange("main")
        await main.publish(aio_pika.Message(b"", message_id="a"), routing_key="nowhere")
        await channel.get_queue("lost")  # a round trip: both publishes handled
    found = {
        m["properties"]["message_id"]: m["steps"][1]["hops"] for m in (await api.json(HISTORY))["messages"]
    }
    assert found["d"] == [
        {
            "source": "",
            "destination": "lost",
            "destination_type": "queue",
            "alternate": False,
            "binding_keys": ["lost"],
        }
    ]
    assert [(h["source"], h["destination"], h["alternate"], h["binding_keys"]) for h in found["a"]] == [
        ("main", "ae", True, []),
        ("ae", "lost", False, [""]),
    ]


@pytest.fixture
async def clocked() -> AsyncIterator[tuple[Api, ManualClock]]:
    clock = ManualClock(start_ms=1_700_000_000_000)
    server = build_node(
        ServerConfig(host="127.0.0.1", port=0, management_port=None), asyncio.get_running_loop(), clock=clock
    )
    await server.start()
    context = ManagementContext(server, node="warrenmq@testhost")
    client: TestClient[Any, Any] = TestClient(TestServer(build_app(context)))
    await client.start_server()
    try:
        yield Api(client, server, context), clock
    finally:
        await client.close()
        await server.stop(grace_s=0.5)


async def test_an_expired_message_is_dated_by_the_brokers_clock(
    clocked: tuple[Api, ManualClock],
) -> None:
    api, clock = clocked
    assert (await api.put("/api/queues/%2F/short", json={"arguments": {"x-message-ttl": 1000}})).status == 201
    assert (await api.put(HISTORY, json={"enabled": True})).status == 204
    connection = await aio_pika.connect(api.amqp_url)
    async with connection:
        channel = await connection.channel()
        await channel.default_exchange.publish(aio_pika.Message(b"", message_id="old"), routing_key="short")
        await channel.get_queue("short")  # a round trip: the publish handled
        clock.advance(2.0)
        found = await _wait_for_steps(api, "message_id=old", ["published", "routed", "expired", "dropped"])
    published, _, expired, dropped = found["steps"]
    assert (expired["queue"], dropped["reason"]) == ("short", "expired")
    assert published["at"] == 1_700_000_000_000  # the broker's clock dates the steps
    assert 1000 <= expired["at"] - published["at"] <= 2000
