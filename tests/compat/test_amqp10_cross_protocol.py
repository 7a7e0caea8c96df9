"""Cross-protocol with the clients people use: python-qpid-proton's BlockingConnection on one side, pika on
the other, against WarrenMQ (--profile rabbitmq-4.0) and RabbitMQ 4.0.5 (skipped with the reason when podman
or its image is missing). What each side observes of the other's message is 4.0.5's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest
from proton import Message, symbol
from proton.utils import BlockingConnection

from tests.compat.amqp10_support import BROKERS, broker_port, pika_channel, proton_url

pytestmark = pytest.mark.compat


@pytest.fixture(params=BROKERS)
def port(request: pytest.FixtureRequest) -> int:
    return broker_port(request, request.param)


@pytest.fixture
def queue(port: int) -> Iterator[str]:
    name = f"amqp10-x-{uuid.uuid4().hex[:10]}"
    channel = pika_channel(port)
    channel.queue_declare(name)
    try:
        yield name
    finally:
        channel.queue_delete(name)
        channel.connection.close()


def test_proton_to_pika(port: int, queue: str) -> None:
    message = Message(
        body=b"from proton",
        inferred=True,
        id="id-1",
        correlation_id="corr-1",
        reply_to="/queues/replies",
        content_type="application/octet-stream",
        subject="ignored by 0-9-1",
        durable=True,
        priority=7,
        ttl=30.0,
        properties={"colour": "blue", "count": 3, "flag": False},
        annotations={symbol("x-opt-tag"): "t"},
    )
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        connection.create_sender(f"/queues/{queue}").send(message)
    finally:
        connection.close()
    channel = pika_channel(port)
    method, properties, body = channel.basic_get(queue, auto_ack=True)
    channel.connection.close()
    assert (method.exchange, method.routing_key, body) == ("", queue, b"from proton")
    assert {k: v for k, v in vars(properties).items() if v is not None} == {
        "content_type": "application/octet-stream",
        "correlation_id": "corr-1",
        "delivery_mode": 2,
        "expiration": "30000",
        "headers": {"colour": "blue", "count": 3, "flag": False, "x-opt-tag": "t"},
        "message_id": "id-1",
        "priority": 7,
        "reply_to": "/queues/replies",
    }


def test_pika_to_proton(port: int, queue: str) -> None:
    channel = pika_channel(port)
    channel.confirm_delivery()
    properties = pika.BasicProperties(
        content_type="text/plain",
        headers={"colour": "blue", "count": 3, "x-trace": "abc"},
        delivery_mode=2,
        priority=4,
        correlation_id="corr-2",
        reply_to="replies",
        message_id="id-2",
        type="kind",
        app_id="app",
    )
    channel.basic_publish("", queue, b"from pika", properties)
    channel.connection.close()
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        receiver = connection.create_receiver(f"/queues/{queue}", credit=1)
        received = receiver.receive(timeout=10)
        receiver.accept()
    finally:
        connection.close()
    seen: dict[str, Any] = {
        "body": received.body,
        "id": received.id,
        "correlation_id": received.correlation_id,
        "reply_to": received.reply_to,
        "content_type": received.content_type,
        "group_id": received.group_id,
        "durable": received.durable,
        "priority": received.priority,
        "first_acquirer": received.first_acquirer,
        "properties": dict(received.properties or {}),
        "annotations": {str(k): v for k, v in (received.annotations or {}).items()},
    }
    assert seen == {
        "body": b"from pika",
        "id": "id-2",
        "correlation_id": "corr-2",
        "reply_to": "replies",
        "content_type": "text/plain",
        "group_id": "app",
        "durable": True,
        "priority": 4,
        "first_acquirer": True,
        "properties": {"colour": "blue", "count": 3},
        "annotations": {"x-basic-type": "kind", "x-trace": "abc", "x-exchange": "", "x-routing-key": queue},
    }


def test_quorum_queue_round_trip_with_release(port: int) -> None:
    """A quorum queue over 1.0: a released message comes back, then is accepted."""
    name = f"amqp10-qq-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(port)
    channel.queue_declare(name, durable=True, arguments={"x-queue-type": "quorum"})
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        connection.create_sender(f"/queues/{name}").send(Message(body=b"qq", inferred=True))
        receiver = connection.create_receiver(f"/queues/{name}", credit=1)
        first = receiver.receive(timeout=10)
        receiver.release()
        again = receiver.receive(timeout=10)
        receiver.accept()
    finally:
        connection.close()
    left = channel.queue_declare(name, passive=True).method.message_count
    channel.queue_delete(name)
    channel.connection.close()
    assert (first.body, first.first_acquirer, again.body, again.first_acquirer) == (b"qq", True, b"qq", False)
    assert left == 0
