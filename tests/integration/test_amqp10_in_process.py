"""AMQP 1.0 against a broker embedded in the test process (``BrokerThread(profile="rabbitmq-4.0")``),
with python-qpid-proton's BlockingConnection and pika: publishing to each kind of address with its outcome,
consuming with each settlement, and 0-9-1 <-> 1.0 in both directions. The differential tests in
tests/compat/test_amqp10_*.py hold these behaviours to RabbitMQ 4.0.5 on a broker process; these run the same
paths where coverage traces them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from broker.testing.embed import BrokerThread
from tests.compat.amqp10_support import pika_channel

proton = pytest.importorskip("proton", reason="python-qpid-proton (the dev extra) is not installed")
from proton import Message  # noqa: E402
from proton.reactor import LinkOption  # noqa: E402
from proton.utils import BlockingConnection, SendException  # noqa: E402

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerThread]:
    with BrokerThread(profile="rabbitmq-4.0") as running:
        yield running


@pytest.fixture
def queue(broker: BrokerThread) -> Iterator[str]:
    name = f"in-process-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(broker.port)
    channel.queue_declare(f"{name}-dlq")
    channel.queue_declare(
        name, arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": f"{name}-dlq"}
    )
    try:
        yield name
    finally:
        channel.queue_delete(name)
        channel.queue_delete(f"{name}-dlq")
        channel.connection.close()


def _connect(broker: BrokerThread, user: str = "guest") -> BlockingConnection:
    return BlockingConnection(
        f"amqp://{user}:guest@127.0.0.1:{broker.port}", timeout=10, allowed_mechs="PLAIN"
    )


def _body(message: Message) -> bytes:
    """A data-section body as bytes (proton gives a memoryview into the message's buffer)."""
    body: object = message.body
    assert isinstance(body, bytes | memoryview), type(body)
    return bytes(body)


def _left(broker: BrokerThread, queue: str) -> list[tuple[bytes, bool]]:
    channel = pika_channel(broker.port)
    seen = []
    while True:
        method, _props, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            break
        seen.append((body, method.redelivered))
    channel.connection.close()
    return seen


def test_published_to_a_queue_and_an_exchange_address_reach_pika_with_properties(
    broker: BrokerThread, queue: str
) -> None:
    connection = _connect(broker)
    try:
        to_queue = connection.create_sender(f"/queues/{queue}")
        to_queue.send(
            Message(body=b"one", inferred=True, id="m-1", correlation_id="c-1", content_type="text/plain",
                    durable=True, properties={"color": "red", "n": 7}, subject="s", reply_to="/queues/back")
        )  # fmt: skip
        via_exchange = connection.create_sender(f"/exchanges/amq.default/{queue}")
        via_exchange.send(Message(body=b"two", inferred=True))
    finally:
        connection.close()
    channel = pika_channel(broker.port)
    _method, props, body = channel.basic_get(queue, auto_ack=True)
    assert (body, props.message_id, props.correlation_id, props.content_type) == (
        b"one",
        "m-1",
        "c-1",
        "text/plain",
    )
    assert props.delivery_mode == 2
    assert props.headers["color"] == "red"
    assert props.headers["n"] == 7
    _method, props, body = channel.basic_get(queue, auto_ack=True)
    assert body == b"two"
    channel.connection.close()


def test_an_unroutable_publish_is_released(broker: BrokerThread) -> None:
    channel = pika_channel(broker.port)
    channel.exchange_declare("in-process-x", "direct")
    channel.connection.close()
    connection = _connect(broker)
    try:
        sender = connection.create_sender("/exchanges/in-process-x/nowhere")
        with pytest.raises(SendException) as refused:  # BlockingSender raises on any outcome but accepted
            sender.send(Message(body=b"lost", inferred=True))
        assert refused.value.state == proton.Delivery.RELEASED
    finally:
        connection.close()


def test_consumed_with_each_settlement(broker: BrokerThread, queue: str) -> None:
    channel = pika_channel(broker.port)
    channel.confirm_delivery()
    for body in (b"accept", b"release", b"reject", b"modify"):
        channel.basic_publish("", queue, body, pika.BasicProperties(headers={"h": body.decode()}))
    channel.connection.close()
    connection = _connect(broker)
    try:
        receiver = connection.create_receiver(f"/queues/{queue}", credit=10)
        got = {}
        for _ in range(4):
            message = receiver.receive(timeout=10)
            body = _body(message)
            got[body] = message
            if body == b"accept":
                receiver.accept()
            elif body == b"release":
                receiver.release(delivered=False)
            elif body == b"reject":
                receiver.reject()
            else:
                receiver.release(delivered=True)
        properties = got[b"accept"].properties
        assert properties is not None
        assert properties["h"] == "accept"
        again = receiver.receive(timeout=10)  # the released one comes back first
        receiver.accept()
        redelivered = receiver.receive(timeout=10)
        receiver.accept()
        assert sorted([_body(again), _body(redelivered)]) == [b"modify", b"release"]
    finally:
        connection.close()
    assert _left(broker, f"{queue}-dlq") == [(b"reject", False)]
    assert _left(broker, queue) == []


def test_a_settled_receiver_consumes_without_acknowledgements(broker: BrokerThread, queue: str) -> None:
    channel = pika_channel(broker.port)
    for n in range(5):
        channel.basic_publish("", queue, b"%d" % n)
    channel.connection.close()
    connection = _connect(broker)
    try:
        receiver = connection.create_receiver(f"/queues/{queue}", credit=2, options=_AtMostOnce())
        # proton's body is a memoryview into the message's buffer: kept alive until copied.
        received = [receiver.receive(timeout=10) for _ in range(5)]
        bodies = [_body(m) for m in received]
    finally:
        connection.close()
    assert bodies == [b"0", b"1", b"2", b"3", b"4"]
    assert _left(broker, queue) == []


def test_a_large_message_both_ways_and_anonymous_login(broker: BrokerThread, queue: str) -> None:
    body = bytes(range(256)) * 2000  # past any one frame
    connection = BlockingConnection(f"amqp://127.0.0.1:{broker.port}", timeout=10, allowed_mechs="ANONYMOUS")
    try:
        connection.create_sender(f"/queues/{queue}").send(Message(body=body, inferred=True))
        receiver = connection.create_receiver(f"/queues/{queue}", credit=1)
        message = receiver.receive(timeout=10)
        assert _body(message) == body
        receiver.accept()
    finally:
        connection.close()


def test_a_wrong_password_is_refused(broker: BrokerThread) -> None:
    with pytest.raises(Exception):  # noqa: B017 - proton raises its ConnectionException family
        BlockingConnection(f"amqp://guest:wrong@127.0.0.1:{broker.port}", timeout=15, allowed_mechs="PLAIN")


class _AtMostOnce(LinkOption):
    """snd-settle-mode settled: the broker sends each message settled (auto-ack)."""

    def apply(self, link: Any) -> None:
        link.snd_settle_mode = proton.Link.SND_SETTLED
