"""Publishing into a stream over AMQP 1.0: the messages as published come back to a 1.0 receiver with their
x-stream-offset, their ``x-stream-filter-value`` message annotation (not an application property of that
name) is their filter value, and a 0-9-1 consumer reads their conversion; and RabbitMQ's AMQP 1.0 client
(rabbitmq-amqp-python-client) reads a stream from an offset. Each case runs against WarrenMQ
(--profile rabbitmq-4.0) and RabbitMQ 4.0.5 (skipped with the reason when podman or its image is missing);
the expected values are 4.0.5's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from rabbitmq_amqp_python_client import (
    AddressHelper,
    AMQPMessagingHandler,
    Environment,
    Event,
    OffsetSpecification,
    StreamConsumerOptions,
)

from protocol.amqp10.delivery_states import Accepted
from protocol.amqp10.message import encode_sections
from protocol.amqp10.performatives import Attach, Disposition, Transfer
from protocol.amqp10.sections import (
    AmqpValue,
    ApplicationProperties,
    Data,
    Header,
    MessageAnnotations,
    MessageSection,
    Properties,
)
from protocol.amqp10.terminus import Source, Target
from protocol.amqp10.types import Symbol, UInt
from tests.compat.amqp10_support import (
    BROKERS,
    RawClient,
    attach_receiver,
    broker_port,
    declare_stream,
    deliveries,
    described,
    drain,
    offset_spec,
    open_session,
    performatives,
    pika_channel,
    settled_ids,
    stream_offsets,
)

pytestmark = [pytest.mark.compat, pytest.mark.timeout(120)]

FILTER = "rabbitmq:stream-filter"
FIRST = offset_spec("first")


@pytest.fixture(params=BROKERS)
def port(request: pytest.FixtureRequest) -> int:
    return broker_port(request, request.param)


@pytest.fixture
def empty_stream(port: int) -> Iterator[str]:
    name, channel = declare_stream(port)
    try:
        yield name
    finally:
        channel.queue_delete(name)
        channel.connection.close()


def _publish10(client: RawClient, stream: str, *messages: list[MessageSection]) -> list[Any]:
    """Publish over 1.0 into ``stream``, unsettled; the outcomes."""
    client.perform(
        Attach(
            name="sender",
            handle=1,
            role=False,
            snd_settle_mode=0,
            rcv_settle_mode=0,
            source=Source(address="sender"),
            target=Target(address=f"/queues/{stream}"),
            initial_delivery_count=0,
        ),
    )
    client.read_count(2)  # the attach and the flow giving credit
    for index, sections in enumerate(messages):
        client.perform(
            Transfer(handle=1, delivery_id=index, delivery_tag=bytes([index]), message_format=0),
            payload=encode_sections(sections),
        )
    items = client.read_until(lambda items: len(settled_ids(items)) >= len(messages))
    outcomes: dict[int, Any] = {}
    for disposition in performatives(items):
        assert isinstance(disposition, Disposition)
        last = disposition.last if disposition.last is not None else disposition.first
        outcomes.update(dict.fromkeys(range(disposition.first, last + 1), disposition.state))
    return [outcomes[index] for index in range(len(messages))]


PUBLISHED_10: list[list[MessageSection]] = [
    [MessageAnnotations({Symbol("x-stream-filter-value"): "red"}), Properties(message_id="a0"), Data(b"p0")],
    # An application property of the annotation's name is not the filter value (RabbitMQ 4.0.5).
    [ApplicationProperties({"x-stream-filter-value": "red", "k": "v"}), Data(b"p1")],
    [Header(durable=True), MessageAnnotations({Symbol("x-stream-filter-value"): "blue"}), AmqpValue("v2")],
]


def test_publish_into_a_stream_and_read_it_over_amqp10(port: int, empty_stream: str) -> None:
    client = open_session(port)
    outcomes = _publish10(client, empty_stream, *PUBLISHED_10)
    assert outcomes == [Accepted(), Accepted(), Accepted()]
    attach_receiver(client, empty_stream, filter_set=FIRST)
    everything = deliveries(drain(client, 10))
    client.close()
    assert [message.header for _, message in everything] == [
        Header(durable=True, first_acquirer=True, delivery_count=UInt(0))
    ] * 3
    annotations = [message.message_annotations for _, message in everything]
    base = {Symbol("x-exchange"): "", Symbol("x-routing-key"): empty_stream}
    assert annotations == [
        MessageAnnotations({Symbol("x-stream-filter-value"): "red", **base, Symbol("x-stream-offset"): 0}),
        MessageAnnotations({**base, Symbol("x-stream-offset"): 1}),
        MessageAnnotations({Symbol("x-stream-filter-value"): "blue", **base, Symbol("x-stream-offset"): 2}),
    ]
    # The bare message as published.
    assert [message.properties for _, message in everything] == [Properties(message_id="a0"), None, None]
    assert [message.application_properties for _, message in everything] == [
        None,
        ApplicationProperties({"x-stream-filter-value": "red", "k": "v"}),
        None,
    ]
    assert [message.body for _, message in everything] == [
        (Data(b"p0"),),
        (Data(b"p1"),),
        (AmqpValue("v2"),),
    ]


def test_filter_value_of_a_message_published_over_amqp10(port: int, empty_stream: str) -> None:
    client = open_session(port)
    _publish10(client, empty_stream, *PUBLISHED_10)
    filter_set = {**FIRST, Symbol(FILTER): described(FILTER, "red")}
    attach_receiver(client, empty_stream, filter_set=filter_set)
    offsets = stream_offsets(drain(client, 10))
    client.close()
    assert offsets == [0]


def test_published_over_amqp10_read_over_amqp091(port: int, empty_stream: str) -> None:
    client = open_session(port)
    _publish10(client, empty_stream, *PUBLISHED_10)
    client.close()
    channel = pika_channel(port)
    channel.basic_qos(prefetch_count=10)
    got: list[tuple[bytes, Any]] = []
    channel.basic_consume(
        empty_stream,
        lambda _ch, _method, properties, body: got.append((body, properties)),
        arguments={"x-stream-offset": "first"},
    )
    deadline = time.monotonic() + 10
    while len(got) < 3 and time.monotonic() < deadline:
        channel.connection.process_data_events(time_limit=0.1)
    channel.connection.close()
    assert [(body, p.headers, p.delivery_mode, p.message_id, p.type) for body, p in got] == [
        (b"p0", {"x-stream-filter-value": "red", "x-stream-offset": 0}, 2, "a0", None),
        (b"p1", {"k": "v", "x-stream-filter-value": "red", "x-stream-offset": 1}, 2, None, None),
        (
            encode_sections([AmqpValue("v2")]),
            {"x-stream-filter-value": "blue", "x-stream-offset": 2},
            2,
            None,
            "amqp-1.0",
        ),
    ]


class _Enough(Exception):
    """Raised by the handler once it has what it waits for: it ends the consumer's run (the client's own
    tests stop a consumer this way)."""


class _Collect(AMQPMessagingHandler):
    """Accepts and keeps every message, and ends the run once it has ``wanted``."""

    def __init__(self, wanted: int) -> None:
        super().__init__()
        self.wanted = wanted
        self.got: list[tuple[bytes, int]] = []

    def on_amqp_message(self, event: Event) -> None:
        message = event.message
        self.got.append((bytes(message.body), int(message.annotations["x-stream-offset"])))
        self.delivery_context.accept(event)
        if len(self.got) >= self.wanted:
            raise _Enough


@pytest.mark.parametrize(
    ("offset", "expected"),
    [(OffsetSpecification.first, [0, 1, 2]), (OffsetSpecification.last, [2]), (1, [1, 2])],
    ids=["first", "last", "offset-1"],
)
def test_rabbitmq_amqp_client_reads_from_an_offset(
    port: int, empty_stream: str, offset: OffsetSpecification | int, expected: list[int]
) -> None:
    """RabbitMQ's own AMQP 1.0 client (rabbitmq-amqp-python-client) reads a stream with its
    StreamConsumerOptions (the offset spec as its name or an integer; its filters need 4.1)."""
    channel = pika_channel(port)
    channel.confirm_delivery()
    for index in range(3):
        channel.basic_publish("", empty_stream, b"m%d" % index)
    channel.connection.close()
    environment = Environment(f"amqp://guest:guest@127.0.0.1:{port}/")
    handler = _Collect(len(expected))
    try:
        connection = environment.connection()
        connection.dial()
        consumer = connection.consumer(
            AddressHelper.queue_address(empty_stream),
            message_handler=handler,
            consumer_options=StreamConsumerOptions(offset_specification=offset),
        )
        # Until the handler has them all (one missing: the timeout marker fails the test).
        with pytest.raises(_Enough):
            consumer.run()
        consumer.close()
    finally:
        environment.close()
    assert handler.got == [(b"m%d" % number, number) for number in expected]
