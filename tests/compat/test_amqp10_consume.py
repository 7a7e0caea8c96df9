"""Consuming over AMQP 1.0: a receiver link from `/queues/:queue`, link credit, the message converted from
AMQP 0-9-1 (published with pika) or kept as published over 1.0, and the client's settlement. Each case runs
against WarrenMQ (--profile rabbitmq-4.0) and RabbitMQ 4.0.5 (skipped with the reason when podman or its
image is missing); the expected values are 4.0.5's."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest
from proton import Message
from proton.reactor import AtMostOnce
from proton.utils import BlockingConnection

from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import Accepted, Modified, Rejected, Released
from protocol.amqp10.message import encode_sections
from protocol.amqp10.performatives import Attach, Detach, Disposition, End, Flow, Transfer
from protocol.amqp10.sections import (
    AmqpValue,
    ApplicationProperties,
    Data,
    Header,
    MessageAnnotations,
    Properties,
)
from protocol.amqp10.terminus import Source, Target
from protocol.amqp10.types import Int, Symbol, Timestamp, UByte, UInt
from tests.compat.amqp10_support import (
    BROKERS,
    INITIAL_DELIVERY_COUNT,
    RawClient,
    attach_receiver,
    broker_port,
    credit,
    performatives,
    pika_channel,
    proton_url,
)

pytestmark = pytest.mark.compat


@pytest.fixture(params=BROKERS)
def port(request: pytest.FixtureRequest) -> int:
    return broker_port(request, request.param)


@pytest.fixture
def queue(port: int) -> Iterator[str]:
    """A fresh queue dead-lettering to ``<queue>-dlq`` (through the default exchange)."""
    name = f"amqp10-{uuid.uuid4().hex[:10]}"
    channel = pika_channel(port)
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


def _publish(port: int, queue: str, *bodies: bytes, properties: pika.BasicProperties | None = None) -> None:
    channel = pika_channel(port)
    channel.confirm_delivery()
    for body in bodies:
        channel.basic_publish("", queue, body, properties or pika.BasicProperties())
    channel.connection.close()


def _bodies(port: int, queue: str) -> list[tuple[bytes, bool]]:
    """What is left in ``queue``: each body and whether it is redelivered."""
    channel = pika_channel(port)
    left = []
    while True:
        method, _, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            break
        left.append((body, method.redelivered))
    channel.connection.close()
    return left


def _attach_receiver(client: RawClient, queue: str, handle: int = 0, settled: bool = False) -> Attach:
    answer = attach_receiver(client, queue, handle, settled)
    assert isinstance(answer, tuple), answer
    assert isinstance(answer[1], Attach), answer
    return answer[1]


def test_receiver_attach_answer(port: int, queue: str) -> None:
    client = RawClient(port)
    client.login()
    client.begin()
    attached = _attach_receiver(client, queue)
    client.close()
    assert attached == Attach(
        name="r0",
        handle=0,
        role=False,
        snd_settle_mode=0,
        rcv_settle_mode=0,
        source=Source(
            address=f"/queues/{queue}",
            default_outcome=Released(),
            outcomes=(
                Symbol("amqp:accepted:list"),
                Symbol("amqp:rejected:list"),
                Symbol("amqp:released:list"),
                Symbol("amqp:modified:list"),
            ),
        ),
        initial_delivery_count=INITIAL_DELIVERY_COUNT,
    )


@pytest.mark.parametrize(
    ("address", "error"),
    [
        (
            "/queues/no-such-queue",
            Error(condition=Symbol("amqp:not-found"), description="no queue 'no-such-queue' in vhost '/'"),
        ),
        (
            "/exchanges/amq.direct",
            Error(
                condition=Symbol("amqp:invalid-field"),
                description='Attach rejected: {unknown_destination,"/exchanges/amq.direct"}',
            ),
        ),
    ],
)
def test_receiver_from_a_missing_queue_or_an_exchange_ends_the_session(
    port: int, address: str, error: Error
) -> None:
    client = RawClient(port)
    client.login()
    client.begin()
    client.perform(Attach(name="r", handle=0, role=True, source=Source(address=address), target=Target()))
    (ended,) = performatives(client.read_count(1))
    client.close()
    assert ended == End(error=error)


def test_credit_limits_transfers_and_drain_spends_the_rest(port: int, queue: str) -> None:
    _publish(port, queue, b"1", b"2", b"3")
    client = RawClient(port)
    client.login()
    client.begin()
    _attach_receiver(client, queue, settled=True)
    credit(client, 2)
    transfers = performatives(client.read_count(2))
    assert [type(t) for t in transfers] == [Transfer, Transfer]
    credit(client, 3, INITIAL_DELIVERY_COUNT + 2, drain=True)
    last, flow = performatives(client.read_count(2))
    client.close()
    assert isinstance(last, Transfer)
    assert isinstance(flow, Flow)
    # One message for three credits: the other two are spent, the delivery-count says so, credit is 0.
    assert (flow.delivery_count, flow.link_credit, flow.drain) == (
        (INITIAL_DELIVERY_COUNT + 5) % 2**32,
        0,
        True,
    )


def test_conversion_from_amqp091(port: int, queue: str) -> None:
    properties = pika.BasicProperties(
        content_type="text/plain",
        content_encoding="gzip",
        headers={"s": "x", "i": 7, "b": True, "n": None, "t": datetime.datetime(2020, 1, 1), "x-foo": "bar"},
        delivery_mode=2,
        priority=3,
        correlation_id="c1",
        reply_to="rq",
        expiration="60000",
        message_id="m1",
        timestamp=1600000000,
        type="ty",
        user_id="guest",
        app_id="app",
    )
    _publish(port, queue, b"full", properties=properties)
    _publish(port, queue, b"min")
    client = RawClient(port)
    client.login()
    client.begin()
    _attach_receiver(client, queue, settled=True)
    credit(client, 2)
    items = client.read_count(2)
    client.close()
    messages = [item[2] for item in items if isinstance(item, tuple)]
    assert [[entry.section for entry in message.sections] for message in messages if message] == [
        [
            Header(
                durable=True, priority=UByte(3), ttl=UInt(60000), first_acquirer=True, delivery_count=UInt(0)
            ),
            MessageAnnotations(
                {
                    Symbol("x-basic-type"): "ty",
                    Symbol("x-foo"): "bar",
                    Symbol("x-exchange"): "",
                    Symbol("x-routing-key"): queue,
                }
            ),
            Properties(
                message_id="m1",
                user_id=b"guest",
                reply_to="rq",
                correlation_id="c1",
                content_type=Symbol("text/plain"),
                content_encoding=Symbol("gzip"),
                creation_time=Timestamp(1600000000000),
                group_id="app",
            ),
            ApplicationProperties(
                {"s": "x", "i": Int(7), "b": True, "n": None, "t": Timestamp(1577836800000)}
            ),
            Data(b"full"),
        ],
        [
            Header(durable=False, first_acquirer=True, delivery_count=UInt(0)),
            MessageAnnotations({Symbol("x-exchange"): "", Symbol("x-routing-key"): queue}),
            Data(b"min"),
        ],
    ]


def test_amqp10_message_comes_back_as_published(port: int, queue: str) -> None:
    """A 1.0 message consumed over 1.0 keeps its annotations and bare message (RabbitMQ 4 keeps the
    message in the protocol it came in); a new header, and x-exchange / x-routing-key added."""
    published: list[Any] = [
        Header(priority=UByte(2)),
        MessageAnnotations({Symbol("x-opt-a"): "b"}),
        Properties(subject="s", to=f"/queues/{queue}", group_sequence=UInt(4)),
        ApplicationProperties({"k": UInt(1)}),
        AmqpValue("v"),
    ]
    client = RawClient(port)
    client.login()
    client.begin()
    target = Target(address=f"/queues/{queue}")
    client.perform(Attach(name="s", handle=1, role=False, initial_delivery_count=0, target=target))
    client.read_count(2)
    transfer = Transfer(handle=1, delivery_id=0, delivery_tag=b"0", message_format=0, settled=True)
    client.perform(transfer, payload=encode_sections(published))
    _attach_receiver(client, queue)
    credit(client, 1)
    (item,) = client.read_count(1)
    client.close()
    assert isinstance(item, tuple)
    assert item[2] is not None
    assert [entry.section for entry in item[2].sections] == [
        Header(durable=True, priority=UByte(2), first_acquirer=True, delivery_count=UInt(0)),
        MessageAnnotations(
            {Symbol("x-opt-a"): "b", Symbol("x-exchange"): "", Symbol("x-routing-key"): queue}
        ),
        *published[2:],
    ]


def test_settlement_outcomes(port: int, queue: str) -> None:
    """accepted acks, released requeues, rejected dead-letters, modified requeues unless undeliverable-here
    (then it dead-letters as rejected)."""
    _publish(port, queue, b"accepted", b"released", b"rejected", b"modified", b"undeliverable")
    client = RawClient(port)
    client.login()
    client.begin()
    _attach_receiver(client, queue)
    credit(client, 5)
    assert len(performatives(client.read_count(5))) == 5
    outcomes: list[Accepted | Released | Rejected | Modified] = [
        Accepted(),
        Released(),
        Rejected(),
        Modified(delivery_failed=True),
        Modified(delivery_failed=True, undeliverable_here=True),
    ]
    for delivery_id, outcome in enumerate(outcomes):
        client.perform(Disposition(role=True, first=delivery_id, settled=True, state=outcome))
    client.perform(Detach(handle=0, closed=True))
    client.read_until(lambda items: any(isinstance(p, Detach) for p in performatives(items)))
    client.close()
    deadline = time.monotonic() + 10
    left = _bodies(port, queue)
    while len(left) < 2 and time.monotonic() < deadline:
        left += _bodies(port, queue)
    assert sorted(left) == [(b"modified", True), (b"released", True)]
    assert sorted(body for body, _ in _bodies(port, f"{queue}-dlq")) == [b"rejected", b"undeliverable"]


def test_detach_requeues_unsettled(port: int, queue: str) -> None:
    _publish(port, queue, b"held")
    client = RawClient(port)
    client.login()
    client.begin()
    _attach_receiver(client, queue)
    credit(client, 1)
    client.read_count(1)
    client.perform(Detach(handle=0, closed=True))
    client.read_until(lambda items: any(isinstance(p, Detach) for p in performatives(items)))
    client.close()
    assert _bodies(port, queue) == [(b"held", True)]


def test_proton_receive_accept_and_at_most_once(port: int, queue: str) -> None:
    _publish(port, queue, b"one", b"two")
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        receiver = connection.create_receiver(f"/queues/{queue}", credit=1)
        first = receiver.receive(timeout=10)
        receiver.accept()
        receiver.close()  # type: ignore[no-untyped-call]
        at_most_once = connection.create_receiver(f"/queues/{queue}", credit=1, options=AtMostOnce())
        second = at_most_once.receive(timeout=10)
    finally:
        connection.close()
    assert isinstance(first, Message)
    assert (first.body, second.body) == (b"one", b"two")
    assert _bodies(port, queue) == []


def test_a_message_larger_than_a_frame_both_ways(port: int, queue: str) -> None:
    """A 300 kB message crosses in several transfer frames (more=true) into the broker and out of it (the
    client's max-frame-size), and reaches a 0-9-1 consumer whole."""
    body = bytes(range(256)) * 1200
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        sender = connection.create_sender(f"/queues/{queue}")
        sender.send(Message(body=body, inferred=True))
        sender.send(Message(body=body, inferred=True))
        receiver = connection.create_receiver(f"/queues/{queue}", credit=1)
        received = receiver.receive(timeout=10)
        receiver.accept()
    finally:
        connection.close()
    assert received.body == body
    # The second went out too (the blocking receiver keeps its one credit topped up) and came back at close.
    assert _bodies(port, queue) == [(body, True)]


def test_deleting_the_queue_detaches_its_receivers(port: int) -> None:
    name = f"amqp10-{uuid.uuid4().hex[:10]}"
    channel = pika_channel(port)
    channel.queue_declare(name)
    client = RawClient(port)
    client.login()
    client.begin()
    _attach_receiver(client, name)
    channel.queue_delete(name)
    channel.connection.close()
    (detached,) = performatives(client.read_count(1))
    client.close()
    assert detached == Detach(handle=0, closed=True, error=Error(condition=Symbol("amqp:resource-deleted")))


@pytest.mark.parametrize("outcome", [Modified(delivery_failed=True), Released()])
def test_quorum_queue_delivery_count_after_an_outcome(port: int, outcome: Modified | Released) -> None:
    """A quorum queue counts every return in the x-delivery-count annotation; the header's delivery-count
    counts only the failed deliveries (modified with delivery-failed), not a release (4.0.5)."""
    name = f"amqp10-qq-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(port)
    channel.queue_declare(name, durable=True, arguments={"x-queue-type": "quorum"})
    _publish(port, name, b"counted")
    client = RawClient(port)
    client.login()
    client.begin()
    _attach_receiver(client, name)
    credit(client, 5)
    client.read_count(1)
    client.perform(Disposition(role=True, first=0, settled=True, state=outcome))
    (again,) = client.read_count(1)
    client.close()
    channel.queue_delete(name)
    channel.connection.close()
    assert isinstance(again, tuple)
    assert again[2] is not None
    header, annotations = (entry.section for entry in again[2].sections[:2])
    assert isinstance(header, Header)
    assert header.first_acquirer is False
    assert header.delivery_count == (0 if isinstance(outcome, Released) else 1)
    assert isinstance(annotations, MessageAnnotations)
    assert annotations.value.get(Symbol("x-delivery-count")) == 1
