"""Streams over AMQP 1.0 and the 1.0 global counters against a broker embedded in the test process
(``BrokerThread(profile="rabbitmq-4.0")``), with python-qpid-proton and pika: a receiver from an offset and
with a filter, every outcome settling a stream delivery, a 1.0 publish read back over both protocols, and
what the session layer counts for rabbitmq_global_*. tests/compat/test_amqp10_streams.py and
test_amqp10_observability.py hold these to RabbitMQ 4.0.5 on a broker process; these run the same paths
where coverage traces them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from broker.core.model.protocol_counters import ACK, DELIVER, REDELIVER
from broker.testing.embed import BrokerThread
from tests.compat.amqp10_support import pika_channel

proton = pytest.importorskip("proton", reason="python-qpid-proton (the dev extra) is not installed")
from proton import Described, Message, symbol  # noqa: E402
from proton.reactor import Filter  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

pytestmark = pytest.mark.timeout(120)

OFFSET = "rabbitmq:stream-offset-spec"
FILTER = "rabbitmq:stream-filter"


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerThread]:
    with BrokerThread(profile="rabbitmq-4.0") as running:
        yield running


@pytest.fixture
def stream(broker: BrokerThread) -> Iterator[str]:
    """A stream holding m0..m3, m0 and m2 tagged red."""
    name = f"in-process-stream-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(broker.port)
    channel.queue_declare(name, durable=True, arguments={"x-queue-type": "stream"})
    channel.confirm_delivery()
    for index in range(4):
        headers = {"x-stream-filter-value": "red"} if index % 2 == 0 else {}
        channel.basic_publish("", name, b"m%d" % index, pika.BasicProperties(headers=headers))
    try:
        yield name
    finally:
        channel.queue_delete(name)
        channel.connection.close()


def _connect(broker: BrokerThread) -> BlockingConnection:
    return BlockingConnection(
        f"amqp://guest:guest@127.0.0.1:{broker.port}", timeout=10, allowed_mechs="PLAIN"
    )


def _filter(**wanted: Any) -> Filter:
    entries = {symbol(OFFSET): Described(symbol(OFFSET), wanted.get("offset", "first"))}
    if "colour" in wanted:
        entries[symbol(FILTER)] = Described(symbol(FILTER), wanted["colour"])
    return Filter(entries)


def _receive(
    connection: BlockingConnection, stream: str, count: int, **wanted: Any
) -> list[tuple[bytes, int]]:
    receiver = connection.create_receiver(f"/queues/{stream}", options=_filter(**wanted), credit=count)
    got = []
    for _ in range(count):
        message = receiver.receive(timeout=10)
        assert message.annotations is not None
        got.append((bytes(message.body), int(message.annotations["x-stream-offset"])))  # type: ignore[arg-type]
        receiver.accept()
    receiver.close()  # type: ignore[no-untyped-call]
    return got


def test_offsets_and_filters(broker: BrokerThread, stream: str) -> None:
    connection = _connect(broker)
    try:
        first = _receive(connection, stream, 4)
        from_two = _receive(connection, stream, 2, offset=2)
        red = _receive(connection, stream, 2, colour="red")
    finally:
        connection.close()
    assert first == [(b"m0", 0), (b"m1", 1), (b"m2", 2), (b"m3", 3)]
    assert from_two == [(b"m2", 2), (b"m3", 3)]
    assert red == [(b"m0", 0), (b"m2", 2)]


def test_released_and_rejected_stream_deliveries_are_not_read_again(
    broker: BrokerThread, stream: str
) -> None:
    connection = _connect(broker)
    try:
        receiver = connection.create_receiver(f"/queues/{stream}", options=_filter(), credit=4)
        bodies = []
        for settle in (receiver.release, receiver.reject, receiver.release, receiver.accept):
            message = receiver.receive(timeout=10)
            bodies.append(bytes(message.body))  # type: ignore[arg-type]
            settle()
    finally:
        connection.close()
    assert bodies == [b"m0", b"m1", b"m2", b"m3"]


def test_a_stream_published_over_amqp10_read_over_both_protocols(broker: BrokerThread) -> None:
    name = f"in-process-stream-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(broker.port)
    channel.queue_declare(name, durable=True, arguments={"x-queue-type": "stream"})
    connection = _connect(broker)
    try:
        sender = connection.create_sender(f"/queues/{name}")
        # inferred: the bytes as a data section (a 0-9-1 consumer's body), not an amqp-value.
        blue_one = Message(body=b"blue one", inferred=True)
        blue_one.annotations = {symbol("x-stream-filter-value"): "blue"}
        sender.send(blue_one)
        sender.send(Message(body=b"plain", inferred=True, properties={"x-stream-filter-value": "blue"}))
        blue = _receive(connection, name, 1, colour="blue")
        channel.basic_qos(prefetch_count=10)
        got: list[tuple[bytes, Any]] = []
        channel.basic_consume(
            name,
            lambda _ch, _method, properties, body: got.append((body, properties.headers)),
            arguments={"x-stream-offset": "first"},
        )
        deadline = time.monotonic() + 10
        while len(got) < 2 and time.monotonic() < deadline:
            channel.connection.process_data_events(time_limit=0.1)
    finally:
        connection.close()
        channel.queue_delete(name)
        channel.connection.close()
    # Only the annotation is the filter value: the application property of that name is not.
    assert blue == [(b"blue one", 0)]
    assert [(body, headers["x-stream-offset"]) for body, headers in got] == [(b"blue one", 0), (b"plain", 1)]


def test_global_counters(broker: BrokerThread, stream: str) -> None:
    counters = broker.broker.amqp10_counters
    before = [counters.count(kind, field) for kind in ("classic", "stream") for field in (DELIVER, ACK)]
    received, routed = counters.received, counters.routed
    queue = f"in-process-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(broker.port)
    channel.queue_declare(queue)
    connection = _connect(broker)
    try:
        sender = connection.create_sender(f"/queues/{queue}")
        sender.send(Message(body=b"counted"))
        receiver = connection.create_receiver(f"/queues/{queue}", credit=1)
        receiver.receive(timeout=10)
        receiver.release()
        receiver.receive(timeout=10)
        receiver.accept()
        _receive(connection, stream, 1)
    finally:
        connection.close()
        channel.queue_delete(queue)
        channel.connection.close()
    after = [counters.count(kind, field) for kind in ("classic", "stream") for field in (DELIVER, ACK)]
    delivered, acked, stream_delivered, stream_acked = (
        now - then for now, then in zip(after, before, strict=True)
    )
    # The proton receiver keeps its credit topped up: the stream may send it all four before it detaches.
    assert (delivered, acked, stream_acked) == (2, 1, 1)
    assert 1 <= stream_delivered <= 4
    assert (counters.received - received, counters.routed - routed) == (1, 1)
    assert counters.count("classic", REDELIVER) >= 1
