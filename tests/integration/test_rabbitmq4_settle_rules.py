"""Two settlement rules RabbitMQ 4.0 changed, on a broker embedded in the test process under
``--profile rabbitmq-4.0`` (tests/compat/test_differential.py holds both to RabbitMQ 4.0.5 through its
scenarios; these run the paths where coverage traces them, and the cases the scenarios do not reach):

- basic.nack and basic.reject of a stream delivery settle it as an ack does (its credit comes back, the
  message stays in the stream, the connection stays open), where 3.x closed the connection with 540;
- a message dead-lettered with x-dead-letter-routing-key keeps its CC header, and is routed by that key alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from broker.testing.embed import BrokerThread


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerThread]:
    with BrokerThread(profile="rabbitmq-4.0") as running:
        yield running


@pytest.fixture
def connection(broker: BrokerThread) -> Iterator[pika.BlockingConnection]:
    opened = pika.BlockingConnection(pika.URLParameters(broker.url))
    yield opened
    if opened.is_open:
        opened.close()


def _name(what: str) -> str:
    return f"{what}-{uuid.uuid4().hex[:8]}"


def _stream(ch: Any, bodies: list[bytes]) -> str:
    name = _name("stream")
    ch.queue_declare(name, durable=True, arguments={"x-queue-type": "stream"})
    ch.confirm_delivery()
    for body in bodies:
        ch.basic_publish("", name, body)
    return name


def _pump_until(connection: pika.BlockingConnection, done: Any) -> None:
    for _ in range(100):
        if done():
            return
        connection.process_data_events(time_limit=0.1)
    raise AssertionError("the condition did not come true within 10 s")


@pytest.mark.parametrize(
    ("kind", "requeue"), [("reject", True), ("reject", False), ("nack", True), ("nack", False)]
)
def test_a_stream_delivery_nacked_or_rejected_is_settled_as_an_ack(
    connection: pika.BlockingConnection, kind: str, requeue: bool
) -> None:
    ch = connection.channel()
    stream = _stream(ch, [b"m0", b"m1", b"m2"])
    consumer = connection.channel()
    consumer.basic_qos(prefetch_count=1)
    got: list[tuple[int, bytes]] = []
    consumer.basic_consume(
        stream, lambda _c, m, _p, b: got.append((m.delivery_tag, b)), arguments={"x-stream-offset": "first"}
    )
    _pump_until(connection, lambda: len(got) == 1)
    for _ in range(2):  # each settlement gives back the one credit: the next message comes
        tag = got[-1][0]
        if kind == "reject":
            consumer.basic_reject(tag, requeue=requeue)
        else:
            consumer.basic_nack(tag, multiple=False, requeue=requeue)
        count = len(got)
        _pump_until(connection, lambda count=count: len(got) == count + 1)
    assert [body for _, body in got] == [b"m0", b"m1", b"m2"]  # nothing redelivered, nothing dead-lettered
    assert connection.is_open
    # The stream keeps every message: a new reader from the first offset reads them all.
    again = connection.channel()
    again.basic_qos(prefetch_count=10)
    replay: list[bytes] = []
    again.basic_consume(
        stream, lambda _c, _m, _p, b: replay.append(b), auto_ack=False, arguments={"x-stream-offset": "first"}
    )
    _pump_until(connection, lambda: len(replay) == 3)
    ch.queue_delete(stream)


def test_a_multiple_nack_requeues_the_classic_deliveries_and_settles_the_stream_ones(
    connection: pika.BlockingConnection,
) -> None:
    ch = connection.channel()
    stream = _stream(ch, [b"s0"])
    classic = _name("classic")
    ch.queue_declare(classic, arguments={"x-queue-type": "classic"})
    ch.basic_publish("", classic, b"c0")
    consumer = connection.channel()
    consumer.basic_qos(prefetch_count=5)
    got: list[tuple[str, int, bool, bytes]] = []

    def on_message(_c: Any, method: Any, _p: Any, body: bytes) -> None:
        got.append((method.routing_key, method.delivery_tag, method.redelivered, body))

    consumer.basic_consume(stream, on_message, arguments={"x-stream-offset": "first"})
    consumer.basic_consume(classic, on_message)
    _pump_until(connection, lambda: len(got) == 2)
    consumer.basic_nack(max(tag for _, tag, _, _ in got), multiple=True, requeue=True)
    # The classic message comes back redelivered; the stream's does not.
    _pump_until(connection, lambda: len(got) == 3)
    connection.process_data_events(time_limit=0.3)
    assert got[2][0] == classic
    assert got[2][2:] == (True, b"c0")
    assert len(got) == 3
    ch.queue_delete(stream)
    ch.queue_delete(classic)


def test_dead_lettering_with_a_routing_key_keeps_cc_and_routes_by_that_key_alone(
    connection: pika.BlockingConnection,
) -> None:
    ch = connection.channel()
    dlx = _name("dlx")
    ch.exchange_declare(dlx, "direct", auto_delete=True)
    by_key, by_cc = _name("by-key"), _name("by-cc")
    for queue, key in ((by_key, "dl-key"), (by_cc, "cc-key")):
        ch.queue_declare(queue, exclusive=True)
        ch.queue_bind(queue, dlx, key)
    source = _name("source")
    ch.queue_declare(
        source,
        exclusive=True,
        arguments={"x-dead-letter-exchange": dlx, "x-dead-letter-routing-key": "dl-key"},
    )
    ch.basic_publish("", source, b"m", pika.BasicProperties(headers={"CC": ["cc-key"]}))
    method, _, _ = ch.basic_get(source)
    assert method is not None
    ch.basic_reject(method.delivery_tag, requeue=False)
    for _ in range(100):
        method, properties, body = ch.basic_get(by_key, auto_ack=True)
        if method is not None:
            break
        connection.process_data_events(time_limit=0.05)
    assert body == b"m"
    assert properties.headers["CC"] == ["cc-key"]
    assert properties.headers["x-death"][0]["routing-keys"] == [source, "cc-key"]
    assert ch.queue_declare(by_cc, passive=True).method.message_count == 0
