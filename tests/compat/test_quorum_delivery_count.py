"""A quorum queue's x-delivery-count over AMQP 0-9-1, against both oracles (3.10.8 beside the default
profile, 4.0.5 beside ``--profile rabbitmq-4.0``): what basic.get carries before and after a return, and
what the message dead-lettered at its x-delivery-limit carries (RabbitMQ counts deliveries in what it sends,
never in the message it keeps, so the dead-lettered copy has no x-delivery-count)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pika
import pytest

from tests.compat.conftest import Oracle
from tests.compat.rabbitmq_node import rabbitmq_available

pytestmark = [
    pytest.mark.compat,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]


def _get(channel: Any, queue: str, auto_ack: bool = False) -> tuple[Any, Any]:
    """basic.get until a message comes (a quorum queue enqueues through its Raft log: a get right after the
    publish may find it empty on RabbitMQ), within a generous deadline."""
    deadline = time.monotonic() + 20
    while True:
        method, properties, _ = channel.basic_get(queue, auto_ack=auto_ack)
        if method is not None or time.monotonic() > deadline:
            return method, properties
        time.sleep(0.05)


def _observe(url: str, suffix: str) -> list[Any]:
    quorum, dead = f"qq-count-{suffix}", f"qq-dead-{suffix}"
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = connection.channel()
        channel.queue_declare(dead, durable=True)
        arguments = {
            "x-queue-type": "quorum",
            "x-delivery-limit": 1,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": dead,
        }
        channel.queue_declare(quorum, durable=True, arguments=arguments)
        channel.basic_publish("", quorum, b"m", pika.BasicProperties(headers={"app": 1}))
        seen: list[Any] = []
        for _ in range(2):  # the first delivery, the one after a return; the next passes the limit
            method, properties = _get(channel, quorum)
            assert method is not None
            seen.append((method.redelivered, properties.headers))
            channel.basic_nack(method.delivery_tag, requeue=True)
        method, properties = _get(channel, dead, auto_ack=True)
        assert method is not None
        headers = dict(properties.headers)
        deaths = [{k: v for k, v in death.items() if k != "time"} for death in headers.pop("x-death")]
        # x-last-death-* come with 3.13's dead-lettering (a listed deviation of the default profile).
        kept = {k: v for k, v in headers.items() if not k.startswith("x-last-death-")}
        seen.append((method.redelivered, kept, deaths))
        channel.queue_delete(quorum)
        channel.queue_delete(dead)
        return seen
    finally:
        connection.close()


def test_delivery_counts_and_the_dead_lettered_copy_match_rabbitmq(oracle: Oracle) -> None:
    suffix = uuid.uuid4().hex[:8]  # the same names on both brokers: they appear in x-death
    assert _observe(oracle.warrenmq_url, suffix) == _observe(oracle.rabbitmq_url, suffix)
