"""Differential: per-queue message and byte figures (message_bytes*, messages_persistent, *_ram, paged-out)
after the same traffic on a private RabbitMQ node and on WarrenMQ: durable and transient queues, persistent
and transient messages of different sizes, unacknowledged deliveries, a requeue, a priority queue and a
drop-head length limit. Our figures come from counters kept as messages move
(broker.core.queues.queue_bytes)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pytest
import requests

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.conftest import start_broker_process
from tests.management.test_compat_statistics import StatsNode

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]
GUEST = ("guest", "guest")
QUEUES: dict[str, tuple[bool, dict[str, Any]]] = {
    "qb-durable": (True, {}),
    "qb-transient": (False, {}),
    "qb-priority": (True, {"x-max-priority": 5}),
    "qb-limited": (False, {"x-max-length": 4}),
}
CONSUMED = ("qb-durable", "qb-transient", "qb-priority")
FIELDS = (
    "messages",
    "messages_ready",
    "messages_unacknowledged",
    "messages_persistent",
    "messages_ram",
    "messages_ready_ram",
    "messages_unacknowledged_ram",
    "messages_paged_out",
    "message_bytes",
    "message_bytes_ready",
    "message_bytes_unacknowledged",
    "message_bytes_ram",
    "message_bytes_persistent",
    "message_bytes_paged_out",
)


def _traffic(port: int) -> pika.BlockingConnection:
    connection = pika.BlockingConnection(pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{port}/"))
    channel = connection.channel()
    channel.confirm_delivery()
    for name, (durable, arguments) in QUEUES.items():
        channel.queue_declare(name, durable=durable, arguments=arguments)
        for index in range(10):
            properties = pika.BasicProperties(delivery_mode=2 if index % 2 else 1, priority=index % 6)
            channel.basic_publish("", name, b"x" * (100 + 7 * index), properties)
    consumer = connection.channel()
    consumer.basic_qos(prefetch_count=3)
    received: list[tuple[pika.channel.Channel, int]] = []
    for name in CONSUMED:
        consumer.basic_consume(name, lambda ch, method, _p, _b: received.append((ch, method.delivery_tag)))
    _until(connection, lambda: len(received) >= 9)
    # One delivery goes back (requeued to its place) and the consumer takes one again.
    consumer.basic_nack(received[0][1], requeue=True)
    _until(connection, lambda: len(received) >= 10)
    # A fetched-and-acked message leaves the queue; a fetched-and-unacked one stays unacknowledged.
    method, _, _ = channel.basic_get("qb-limited")
    channel.basic_ack(method.delivery_tag)
    return connection


def _until(connection: pika.BlockingConnection, done: Any) -> None:
    deadline = time.monotonic() + 10
    while not done():
        assert time.monotonic() < deadline, "deliveries did not arrive"
        connection.process_data_events(0.05)


def _figures(base: str) -> dict[str, dict[str, Any]]:
    figures = {}
    for name in QUEUES:
        response = requests.get(f"{base}/api/queues/%2F/{name}", auth=GUEST, timeout=10)
        assert response.status_code == 200, response.text
        body = response.json()
        figures[name] = {field: body.get(field) for field in FIELDS}
    return figures


def _settled(base: str) -> dict[str, dict[str, Any]]:
    """RabbitMQ's queues report every second (collect_statistics_interval): wait until two reads agree and
    show the consumer's unacknowledged deliveries."""
    deadline = time.monotonic() + 30
    previous: dict[str, dict[str, Any]] | None = None
    while time.monotonic() < deadline:
        figures = _figures(base)
        if figures == previous and all(figures[name]["messages_unacknowledged"] == 3 for name in CONSUMED):
            return figures
        previous = figures
        time.sleep(1.2)
    raise AssertionError(f"figures did not settle: {previous}")


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    node = StatsNode(Path(tmp_path_factory.mktemp("queue-bytes-oracle")))
    node.start()
    ours = start_broker_process()
    try:
        yield node.http_url, f"http://127.0.0.1:{ours.ready['management_port']}"
    finally:
        ours.stop()
        node.stop()


def test_queue_byte_figures_agree_with_rabbitmq(bases: tuple[str, str]) -> None:
    oracle, ours = bases
    # Each side's broker port is read from its own overview.
    connections = []
    for base in (oracle, ours):
        overview = requests.get(f"{base}/api/overview", auth=GUEST, timeout=10).json()
        port = next(item["port"] for item in overview["listeners"] if item["protocol"] == "amqp")
        connections.append(_traffic(port))
    try:
        theirs, mine = _settled(oracle), _settled(ours)
    finally:
        for connection in connections:
            connection.close()
    assert mine == theirs
    # And the figures are not trivially equal: bytes are held, some persistent, some unacknowledged.
    assert theirs["qb-durable"]["message_bytes_persistent"] > 0
    assert theirs["qb-transient"]["message_bytes_persistent"] == 0
    assert theirs["qb-priority"]["message_bytes_unacknowledged"] > 0
