"""Publishing over AMQP 1.0: v2 target addresses, outcomes, link credit, and the message as an AMQP 0-9-1
consumer (pika) receives it. Each case runs against WarrenMQ (--profile rabbitmq-4.0) and RabbitMQ 4.0.5
(skipped with the reason when podman or its image is missing); the expected values are 4.0.5's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from proton import Delivery, Message
from proton.utils import BlockingConnection, SendException

from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import Accepted, Rejected
from protocol.amqp10.message import encode_sections
from protocol.amqp10.performatives import Attach, Disposition, End, Flow, Transfer
from protocol.amqp10.sections import (
    AmqpSequence,
    AmqpValue,
    ApplicationProperties,
    Data,
    Header,
    MessageAnnotations,
    Properties,
)
from protocol.amqp10.terminus import Target
from protocol.amqp10.types import Symbol, Timestamp, UByte, UInt, ULong
from tests.compat.amqp10_support import (
    BROKERS,
    RawClient,
    broker_port,
    performatives,
    pika_channel,
    proton_url,
    settled_ids,
)

pytestmark = pytest.mark.compat


@pytest.fixture(params=BROKERS)
def port(request: pytest.FixtureRequest) -> int:
    return broker_port(request, request.param)


@pytest.fixture
def queue(port: int) -> Iterator[str]:
    """A fresh queue, bound to amq.direct with its own name and to amq.fanout."""
    name = f"amqp10-{uuid.uuid4().hex[:10]}"
    channel = pika_channel(port)
    channel.queue_declare(name)
    channel.queue_bind(name, "amq.direct", name)
    channel.queue_bind(name, "amq.fanout")
    try:
        yield name
    finally:
        channel.queue_delete(name)
        channel.connection.close()


@pytest.fixture
def connection(port: int) -> Iterator[BlockingConnection]:
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        yield connection
    finally:
        connection.close()


def _got(port: int, queue: str) -> list[tuple[str, str, dict[str, Any], bytes]]:
    """Every message in ``queue`` as pika receives it: exchange, routing key, set properties, body."""
    channel = pika_channel(port)
    got = []
    while True:
        method, properties, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            break
        props = {k: v for k, v in vars(properties).items() if v is not None}
        got.append((method.exchange, method.routing_key, props, body))
    channel.connection.close()
    return got


def _outcome(connection: BlockingConnection, address: str, body: bytes, **properties: Any) -> int:
    """Send one message (a data section: ``inferred``) to ``address``; the outcome's proton state."""
    sender = connection.create_sender(address)
    try:
        return int(sender.send(Message(body=body, inferred=True, **properties)).remote_state)
    except SendException as refused:
        return int(refused.state)


def test_target_addresses_and_outcomes(port: int, queue: str, connection: BlockingConnection) -> None:
    outcomes = [
        _outcome(connection, f"/queues/{queue}", b"q"),
        _outcome(connection, f"/exchanges/amq.direct/{queue}", b"d"),
        _outcome(connection, "/exchanges/amq.direct/no-such-key", b"x"),
        _outcome(connection, "/exchanges/amq.fanout", b"f"),
        # 4.0.5 publishes to `/exchanges/:exchange` with the empty routing key, the subject notwithstanding.
        _outcome(connection, "/exchanges/amq.direct", b"s", subject=queue),
    ]
    assert outcomes == [
        Delivery.ACCEPTED,
        Delivery.ACCEPTED,
        Delivery.RELEASED,
        Delivery.ACCEPTED,
        Delivery.RELEASED,
    ]
    got = [(exchange, key, body) for exchange, key, _, body in _got(port, queue)]
    assert got == [("", queue, b"q"), ("amq.direct", queue, b"d"), ("amq.fanout", "", b"f")]


def test_null_target_takes_the_to_address(port: int, queue: str) -> None:
    client = RawClient(port)
    client.login()
    client.begin()
    client.perform(Attach(name="anon", handle=0, role=False, initial_delivery_count=0, target=Target()))
    client.read_count(2)  # attach, flow
    payloads: list[list[Any]] = [
        [Properties(to=f"/queues/{queue}"), Data(b"a")],
        [Properties(to="/exchanges/no-such-exchange/k"), Data(b"b")],
        [Properties(), Data(b"c")],
    ]
    for delivery_id, sections in enumerate(payloads):
        transfer = Transfer(handle=0, delivery_id=delivery_id, delivery_tag=b"t", message_format=0)
        client.perform(transfer, payload=encode_sections(sections))
    items = client.read_until(lambda items: settled_ids(items) == {0, 1, 2})
    states = [getattr(p, "state", None) for p in performatives(items)]
    client.close()
    assert states[0] == Accepted()
    assert [getattr(state, "error", None) for state in states[1:]] == [
        Error(condition=Symbol("amqp:not-found"), description="no exchange 'no-such-exchange' in vhost '/'"),
        Error(
            condition=Symbol("amqp:precondition-failed"),
            description="anonymous terminus requires 'to' address to be set",
        ),
    ]
    assert [body for *_, body in _got(port, queue)] == [b"a"]


@pytest.mark.parametrize(
    ("address", "condition", "description"),
    [
        ("/queues/no-such-queue", "amqp:not-found", "no queue 'no-such-queue' in vhost '/'"),
        ("/exchanges/no-such-exchange/k", "amqp:not-found", "no exchange 'no-such-exchange' in vhost '/'"),
    ],
)
def test_attach_to_a_missing_node_ends_the_session(
    port: int, address: str, condition: str, description: str
) -> None:
    client = RawClient(port)
    client.login()
    client.begin()
    client.perform(
        Attach(name="s", handle=0, role=False, initial_delivery_count=0, target=Target(address=address))
    )
    (ended,) = performatives(client.read_count(1))
    client.close()
    assert ended == End(error=Error(condition=Symbol(condition), description=description))


def test_link_credit_170_topped_up_at_half(port: int, queue: str) -> None:
    client = RawClient(port)
    client.login()
    client.begin()
    target = Target(address=f"/queues/{queue}")
    client.perform(Attach(name="s", handle=0, role=False, initial_delivery_count=0, target=target))
    attached, flow = performatives(client.read_count(2))
    assert isinstance(attached, Attach)
    assert (attached.role, attached.max_message_size) == (True, 16 * 1024 * 1024)
    assert isinstance(flow, Flow)
    assert (flow.handle, flow.delivery_count, flow.link_credit) == (0, 0, 170)
    body = encode_sections([Data(b"m")])
    for delivery_id in range(85):
        transfer = Transfer(
            handle=0, delivery_id=delivery_id, delivery_tag=b"t", message_format=0, settled=True
        )
        client.perform(transfer, payload=body)
    (flow,) = performatives(client.read_count(1))
    client.close()
    assert isinstance(flow, Flow)
    assert (flow.handle, flow.delivery_count, flow.link_credit) == (0, 85, 170)
    assert (flow.next_incoming_id, flow.incoming_window) == (85, 315)


def test_settled_and_unsettled_transfers(port: int, queue: str) -> None:
    client = RawClient(port)
    client.login()
    client.begin()
    client.perform(
        Attach(
            name="s",
            handle=0,
            role=False,
            initial_delivery_count=0,
            target=Target(address=f"/queues/{queue}"),
        )
    )
    client.read_count(2)
    settled = Transfer(handle=0, delivery_id=0, delivery_tag=b"0", message_format=0, settled=True)
    client.perform(settled, payload=encode_sections([Data(b"at-most-once")]))
    unsettled = Transfer(handle=0, delivery_id=1, delivery_tag=b"1", message_format=0, settled=False)
    client.perform(unsettled, payload=encode_sections([Data(b"at-least-once")]))
    (disposition,) = performatives(client.read_count(1))
    client.close()
    assert disposition == Disposition(role=True, first=1, settled=True, state=Accepted())
    assert [body for *_, body in _got(port, queue)] == [b"at-most-once", b"at-least-once"]


# Messages published over 1.0 and what a 0-9-1 consumer gets (properties as pika reads them), on 4.0.5.
CONVERSIONS: list[tuple[list[Any], dict[str, Any], bytes]] = [
    (
        [
            Header(durable=True, priority=UByte(5), ttl=UInt(60000)),
            Properties(
                message_id="m1",
                user_id=b"guest",
                to="/queues/ignored",
                subject="subj",
                reply_to="/queues/rq",
                correlation_id="c1",
                content_type=Symbol("text/plain"),
                content_encoding=Symbol("gzip"),
                absolute_expiry_time=Timestamp(1700000000000),
                creation_time=Timestamp(1600000000123),
                group_id="g",
                group_sequence=UInt(3),
                reply_to_group_id="rg",
            ),
            ApplicationProperties({"s": "x", "i": 7, "b": True, "n": None, "u": UInt(9), "sym": Symbol("y")}),
            Data(b"body1"),
        ],
        {
            "app_id": "g",
            "content_encoding": "gzip",
            "content_type": "text/plain",
            "correlation_id": "c1",
            "delivery_mode": 2,
            "expiration": "60000",
            "headers": {"b": True, "i": 7, "n": None, "s": "x", "sym": "y", "u": 9},
            "message_id": "m1",
            "priority": 5,
            "reply_to": "/queues/rq",
            "timestamp": 1600000000,
            "user_id": "guest",
        },
        b"body1",
    ),
    (
        [
            MessageAnnotations({Symbol("x-opt-foo"): "bar", Symbol("x-other"): 3}),
            Properties(message_id=ULong(42), correlation_id=uuid.UUID(int=1)),
            AmqpValue("a string"),
        ],
        {
            "correlation_id": "urn:uuid:00000000-0000-0000-0000-000000000001",
            "delivery_mode": 2,
            "headers": {"x-opt-foo": "bar", "x-other": 3},
            "message_id": "42",
            "type": "amqp-1.0",
        },
        b"\x00Sw\xa1\x08a string",
    ),
    (
        [Properties(message_id=b"\x01\x02", correlation_id=ULong(7)), AmqpSequence([1, 2])],
        {
            "correlation_id": "7",
            "delivery_mode": 2,
            "headers": {"x-message-id": b"\x01\x02"},
            "type": "amqp-1.0",
        },
        b"\x00Sv\xc0\x05\x02U\x01U\x02",
    ),
    (
        [Properties(message_id=uuid.UUID(int=2)), Data(b"p1"), Data(b"p2")],
        {"delivery_mode": 2, "message_id": "urn:uuid:00000000-0000-0000-0000-000000000002"},
        b"p1p2",
    ),
    ([Header(durable=False), Data(b"")], {}, b""),
]


def test_conversion_to_amqp091(port: int, queue: str) -> None:
    client = RawClient(port)
    client.login()
    client.begin()
    client.perform(
        Attach(
            name="s",
            handle=0,
            role=False,
            initial_delivery_count=0,
            target=Target(address=f"/queues/{queue}"),
        )
    )
    client.read_count(2)
    for delivery_id, (sections, _, _) in enumerate(CONVERSIONS):
        transfer = Transfer(
            handle=0, delivery_id=delivery_id, delivery_tag=b"t", message_format=0, settled=False
        )
        client.perform(transfer, payload=encode_sections(sections))
    client.read_until(lambda items: settled_ids(items) == set(range(len(CONVERSIONS))))
    client.close()
    got = [(props, body) for _, _, props, body in _got(port, queue)]
    assert got == [(props, body) for _, props, body in CONVERSIONS]


def test_a_queue_refusing_with_reject_publish(port: int) -> None:
    """x-overflow reject-publish: the publish over the limit is answered rejected (4.0.5)."""
    name = f"amqp10-full-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(port)
    channel.queue_declare(name, arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
    client = RawClient(port)
    client.login()
    client.begin()
    target = Target(address=f"/queues/{name}")
    client.perform(Attach(name="s", handle=0, role=False, initial_delivery_count=0, target=target))
    client.read_count(2)
    for delivery_id in (0, 1):
        transfer = Transfer(handle=0, delivery_id=delivery_id, delivery_tag=b"t", message_format=0)
        client.perform(transfer, payload=encode_sections([Data(b"m")]))
    items = client.read_until(lambda items: settled_ids(items) == {0, 1})
    client.close()
    channel.queue_delete(name)
    channel.connection.close()
    states = [p.state for p in performatives(items) if isinstance(p, Disposition)]
    assert states == [Accepted(), Rejected()]
