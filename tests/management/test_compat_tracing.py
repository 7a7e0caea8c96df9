"""Differential: the firehose (`tracing: true` on a vhost through PUT /api/vhosts/{v}) on a private RabbitMQ
node and on WarrenMQ. The same publishes (routed, unroutable, with properties and CC) and deliveries (consume,
basic.get, a redelivery) produce the same trace messages on amq.rabbitmq.trace, compared field by field:
routing key, body, every header; only the node name, the connection's ports and our own consumer's name
differ by nature."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pika
import pytest
import requests

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.conftest import BrokerProcess, start_broker_process
from tests.management.rabbitmq_management_node import ManagementNode

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]
GUEST = ("guest", "guest")


def _set_tracing(base: str, on: bool) -> None:
    response = requests.put(f"{base}/api/vhosts/%2F", json={"tracing": on}, auth=GUEST, timeout=10)
    assert response.status_code in (201, 204), response.text
    assert requests.get(f"{base}/api/vhosts/%2F", auth=GUEST, timeout=10).json()["tracing"] is on


def _normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _normalise(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_normalise(inner) for inner in value]
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, str):
        value = re.sub(r"127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+", "CLIENT -> SERVER", value)
    return value


def _scenario(port: int) -> list[tuple[str, Any, bytes, Any]]:
    connection = pika.BlockingConnection(pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{port}/"))
    try:
        channel = connection.channel()
        channel.queue_declare("trace-log")
        channel.queue_bind("trace-log", "amq.rabbitmq.trace", "#")
        channel.queue_declare("tq")
        channel.queue_declare("tq-cc")
        channel.queue_bind("tq-cc", "amq.direct", "cc-key")
        properties = pika.BasicProperties(
            content_type="text/plain",
            delivery_mode=2,
            priority=3,
            message_id="m-1",
            correlation_id="c-1",
            headers={"h": "v", "n": 7, "CC": ["cc-key"]},
        )
        channel.basic_publish("", "tq", b"first", properties)
        channel.basic_publish("amq.direct", "nowhere", b"lost")
        channel.basic_publish("", "tq", b"second")
        method, _, _ = channel.basic_get("tq", auto_ack=False)
        assert method is not None
        channel.basic_nack(method.delivery_tag, requeue=True)  # the next delivery is a redelivery
        for method, _, _ in channel.consume("tq", inactivity_timeout=0.5):
            if method is None:
                break
            channel.basic_ack(method.delivery_tag)
        channel.cancel()
        traces: list[tuple[str, Any, bytes, pika.BasicProperties]] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            method, header, body = channel.basic_get("trace-log", auto_ack=True)
            if method is None:
                if len(traces) >= 6:
                    break
                time.sleep(0.1)
                continue
            traces.append((method.routing_key, _normalise(dict(header.headers or {})), body, header))
        return [(key, headers, body, _shape(header)) for key, headers, body, header in traces]
    finally:
        connection.close()


def _shape(header: pika.BasicProperties) -> dict[str, Any]:
    """The trace message's own properties: only headers are set."""
    return {name: value for name, value in vars(header).items() if value is not None and name != "headers"}


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[tuple[str, int], tuple[str, int]]]:
    node = ManagementNode(tmp_path_factory.mktemp("rabbitmq-trace"))
    node.start()
    warren: BrokerProcess = start_broker_process("--data-dir", "none")
    try:
        yield (node.http_url, node.port), (f"http://127.0.0.1:{warren.management_port}", warren.port)
    finally:
        warren.stop()
        node.stop()


def test_trace_messages_match_rabbitmqs_field_by_field(
    sides: tuple[tuple[str, int], tuple[str, int]],
) -> None:
    results = []
    for base, port in sides:
        _set_tracing(base, True)
        try:
            results.append(_scenario(port))
        finally:
            _set_tracing(base, False)
    rabbit, warren = results
    for trace in rabbit + warren:
        trace[1]["node"] = "NODE" if trace[1].get("node") else trace[1].get("node")
    assert [t[0] for t in warren] == [t[0] for t in rabbit]
    for expected, actual in zip(rabbit, warren, strict=True):
        differing = {
            key: (expected[1].get(key), actual[1].get(key))
            for key in set(expected[1]) | set(actual[1])
            if expected[1].get(key) != actual[1].get(key)
        }
        assert (expected[0], differing, expected[2], expected[3]) == (actual[0], {}, actual[2], actual[3])


def test_tracing_off_publishes_nothing_to_the_trace_exchange(
    sides: tuple[tuple[str, int], tuple[str, int]],
) -> None:
    _, (base, port) = sides
    _set_tracing(base, False)
    connection = pika.BlockingConnection(pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{port}/"))
    try:
        channel = connection.channel()
        channel.queue_declare("trace-off-log")
        channel.queue_bind("trace-off-log", "amq.rabbitmq.trace", "#")
        channel.basic_publish("", "trace-off-log", b"x")
        channel.basic_get("trace-off-log", auto_ack=True)
        assert channel.queue_declare("trace-off-log", passive=True).method.message_count == 0
    finally:
        connection.close()
