"""Streams over AMQP 1.0: a receiver link on a stream queue, started by the source's
`rabbitmq:stream-offset-spec` and filtered by `rabbitmq:stream-filter` / `rabbitmq:stream-match-unfiltered`,
each transfer annotated with its `x-stream-offset`; settlement, credit and drain on a stream; publishing
into a stream over 1.0 with the `x-stream-filter-value` annotation. Each case runs against WarrenMQ
(--profile rabbitmq-4.0) and RabbitMQ 4.0.5 (skipped with the reason when podman or its image is missing);
the expected values are 4.0.5's.

Every read ends at something the broker sends (a drain's closing flow, an echoed flow, a session's end), so an
assertion that nothing more was delivered waits on no timer."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest
from proton import Described as ProtonDescribed
from proton import symbol
from proton.reactor import Filter
from proton.utils import BlockingConnection

from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import Accepted, Modified, Rejected, Released
from protocol.amqp10.message import Message as Message10
from protocol.amqp10.message import encode_sections
from protocol.amqp10.performatives import Attach, Disposition, End, Flow, Transfer
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
from protocol.amqp10.types import Array, Described, Symbol, Timestamp, UInt, ULong
from tests.compat.amqp10_support import (
    BROKERS,
    INITIAL_DELIVERY_COUNT,
    Item,
    RawClient,
    attach_receiver,
    broker_port,
    credit,
    performatives,
    pika_channel,
    proton_url,
    settled_ids,
)

pytestmark = pytest.mark.compat

OFFSET = "rabbitmq:stream-offset-spec"
FILTER = "rabbitmq:stream-filter"
UNFILTERED = "rabbitmq:stream-match-unfiltered"
# Five messages m0..m4 at offsets 0..4, tagged red, none, blue, red, none.
COLOURS = ("red", None, "blue", "red", None)


def _described(name: str, value: Any) -> Described:
    return Described(Symbol(name), value)


def _spec(value: Any) -> dict[Any, Any]:
    return {Symbol(OFFSET): _described(OFFSET, value)}


FIRST = _spec("first")


@pytest.fixture(params=BROKERS)
def port(request: pytest.FixtureRequest) -> int:
    return broker_port(request, request.param)


def _declare(port: int) -> tuple[str, Any]:
    name = f"amqp10-stream-{uuid.uuid4().hex[:10]}"
    channel = pika_channel(port)
    channel.queue_declare(name, durable=True, arguments={"x-queue-type": "stream"})
    channel.confirm_delivery()
    return name, channel


@pytest.fixture
def stream(port: int) -> Iterator[str]:
    """A stream holding m0..m4 (COLOURS as their x-stream-filter-value), published with pika."""
    name, channel = _declare(port)
    for index, colour in enumerate(COLOURS):
        headers = {"x-stream-filter-value": colour} if colour else {}
        channel.basic_publish("", name, b"m%d" % index, pika.BasicProperties(headers=headers))
    try:
        yield name
    finally:
        channel.queue_delete(name)
        channel.connection.close()


@pytest.fixture
def empty_stream(port: int) -> Iterator[str]:
    name, channel = _declare(port)
    try:
        yield name
    finally:
        channel.queue_delete(name)
        channel.connection.close()


def _publish_one(port: int, stream: str, body: bytes) -> None:
    channel = pika_channel(port)
    channel.confirm_delivery()
    channel.basic_publish("", stream, body)
    channel.connection.close()


def _client(port: int) -> RawClient:
    client = RawClient(port)
    client.login()
    client.begin()
    return client


def _attached(answer: Item) -> Attach:
    assert isinstance(answer, tuple), answer
    attach = answer[1]
    assert isinstance(attach, Attach), answer
    return attach


def _drain(client: RawClient, link_credit: int, delivery_count: int = INITIAL_DELIVERY_COUNT) -> list[Item]:
    """Credit with drain: what is available, then the flow that spends the rest (read until that flow)."""
    credit(client, link_credit, delivery_count, drain=True)
    return client.read_until(
        lambda items: any(isinstance(p, Flow) and p.handle == 0 for p in performatives(items))
    )


def _deliveries(items: list[Item]) -> list[tuple[Transfer, Message10]]:
    found = []
    for item in items:
        if isinstance(item, tuple) and isinstance(item[1], Transfer):
            message = item[2]
            assert message is not None
            found.append((item[1], message))
    return found


def _offsets(items: list[Item]) -> list[int]:
    offsets = []
    for _, message in _deliveries(items):
        assert message.message_annotations is not None
        offsets.append(message.message_annotations.value[Symbol("x-stream-offset")])
    return offsets


@pytest.mark.parametrize(
    ("filter_set", "offsets"),
    [
        (FIRST, [0, 1, 2, 3, 4, 5]),
        (_spec("last"), [4, 5]),
        (_spec("next"), [5]),
        (_spec(ULong(2)), [2, 3, 4, 5]),
        (_spec(3), [3, 4, 5]),  # a long
        (_spec(-1), [0, 1, 2, 3, 4, 5]),  # before the head: the head
        (_spec(Timestamp(0)), [0, 1, 2, 3, 4, 5]),
        (_spec("1h"), [0, 1, 2, 3, 4, 5]),
        # What 4.0.5 does not read as a spec starts at next.
        (_spec(Symbol("first")), [5]),
        (_spec(True), [5]),
        ({Symbol(OFFSET): 3}, [3, 4, 5]),  # not described: read as it is
        ({Symbol(OFFSET): _described("example:other", 3)}, [5]),
        ({Symbol("from-start"): _described(OFFSET, "first")}, [5]),  # found by its key, not its descriptor
        (None, [5]),
    ],
    ids=lambda value: "none" if value is None else repr(value)[-24:],
)
def test_offset_spec(port: int, stream: str, filter_set: dict[Any, Any] | None, offsets: list[int]) -> None:
    client = _client(port)
    attach = _attached(attach_receiver(client, stream, filter_set=filter_set))
    _publish_one(port, stream, b"m5")
    # Every case ends at m5, published after the attach (a drain could end before a stream reader sees it).
    credit(client, 10)
    items = client.read_until(lambda items: 5 in _offsets(items))
    client.close()
    # The filter-set comes back whole, whatever of it was read.
    assert isinstance(attach.source, Source)
    assert attach.source.filter == filter_set
    assert _offsets(items) == offsets
    bodies = [message.body for _, message in _deliveries(items)]
    assert bodies == [(Data(b"m%d" % offset),) for offset in offsets]


def test_an_offset_past_the_tail_is_waited_for(port: int, stream: str) -> None:
    """4.0.5 starts a receiver attached at offset 7 of a stream whose tail is 5 at 7, not at the tail."""
    client = _client(port)
    _attached(attach_receiver(client, stream, filter_set=_spec(7)))
    for index in (5, 6, 7):
        _publish_one(port, stream, b"m%d" % index)
    credit(client, 10)
    items = client.read_until(lambda items: 7 in _offsets(items))
    client.close()
    assert _offsets(items) == [7]


def test_delivery_sections(port: int, stream: str) -> None:
    """The header and the annotations of a stream delivery, byte for byte: x-stream-offset as a long, last."""
    client = _client(port)
    attach_receiver(client, stream, filter_set=_spec(ULong(3)))
    credit(client, 1)
    ((transfer, message),) = _deliveries(client.read_count(1))
    client.close()
    assert (transfer.settled, transfer.message_format) == (False, 0)
    assert message.header == Header(durable=False, first_acquirer=True, delivery_count=UInt(0))
    raw = [section.raw for section in message.sections]
    assert raw[1] == encode_sections(
        [
            MessageAnnotations(
                {
                    Symbol("x-stream-filter-value"): "red",
                    Symbol("x-exchange"): "",
                    Symbol("x-routing-key"): stream,
                    Symbol("x-stream-offset"): 3,
                }
            )
        ]
    )


@pytest.mark.parametrize(
    ("wanted", "unfiltered", "offsets"),
    [
        ("red", None, [0, 3]),
        ("red", True, [0, 1, 3, 4]),
        ("red", False, [0, 3]),
        (["red", "blue"], None, [0, 2, 3]),
        (["red", "blue"], True, [0, 1, 2, 3, 4]),
        ("green", None, []),
        # What 4.0.5 does not read as a filter filters nothing.
        (Symbol("red"), None, [0, 1, 2, 3, 4]),
        (Array("string", ("red",)), None, [0, 1, 2, 3, 4]),
    ],
    ids=lambda value: repr(value)[:30],
)
def test_stream_filter(
    port: int, stream: str, wanted: Any, unfiltered: bool | None, offsets: list[int]
) -> None:
    filter_set = {**FIRST, Symbol(FILTER): _described(FILTER, wanted)}
    if unfiltered is not None:
        filter_set[Symbol(UNFILTERED)] = _described(UNFILTERED, unfiltered)
    client = _client(port)
    _attached(attach_receiver(client, stream, filter_set=filter_set))
    items = _drain(client, 10)
    client.close()
    assert _offsets(items) == offsets


@pytest.mark.parametrize(
    "outcome",
    [Accepted(), Released(), Rejected(), Modified(delivery_failed=True), Modified(undeliverable_here=True)],
    ids=lambda outcome: repr(outcome)[:40],
)
def test_every_outcome_settles_a_stream_delivery(port: int, stream: str, outcome: Any) -> None:
    """Released, rejected or modified, a stream's delivery is not read again: the reader goes on."""
    client = _client(port)
    attach_receiver(client, stream, filter_set=FIRST)
    credit(client, 2)
    assert _offsets(client.read_count(2)) == [0, 1]
    client.perform(Disposition(role=True, first=0, last=1, settled=True, state=outcome))
    items = _drain(client, 10, INITIAL_DELIVERY_COUNT + 2)
    client.close()
    assert not [p for p in performatives(items) if isinstance(p, End | Disposition)]
    assert _offsets(items) == [2, 3, 4]


def test_settled_receiver(port: int, stream: str) -> None:
    """snd-settle-mode settled reads a stream too (0-9-1's auto-ack is refused on one): transfers settled."""
    client = _client(port)
    attach = _attached(attach_receiver(client, stream, settled=True, filter_set=FIRST))
    items = _drain(client, 3)
    client.close()
    assert attach.snd_settle_mode == 1
    assert [transfer.settled for transfer, _ in _deliveries(items)] == [True, True, True]


def test_credit_and_available(port: int, stream: str) -> None:
    """Credit bounds the transfers; an echoed flow's available counts what the reader has still to read."""
    client = _client(port)
    attach_receiver(client, stream, filter_set=FIRST)
    credit(client, 0, echo=True)
    (echoed,) = performatives(client.read_count(1))
    credit(client, 2)
    assert _offsets(client.read_count(2)) == [0, 1]
    credit(client, 0, INITIAL_DELIVERY_COUNT + 2, echo=True)
    (after,) = performatives(client.read_count(1))
    client.close()
    assert isinstance(echoed, Flow)
    assert isinstance(after, Flow)
    assert (echoed.delivery_count, echoed.link_credit, echoed.available) == (INITIAL_DELIVERY_COUNT, 0, 5)
    assert (after.delivery_count, after.link_credit, after.available) == (INITIAL_DELIVERY_COUNT + 2, 0, 3)


def test_drain_at_the_tail(port: int, stream: str) -> None:
    client = _client(port)
    attach_receiver(client, stream, filter_set=_spec("next"))
    items = _drain(client, 1)
    client.close()
    (flow,) = performatives(items)
    assert isinstance(flow, Flow)
    assert (flow.delivery_count, flow.link_credit, flow.available, flow.drain) == (
        INITIAL_DELIVERY_COUNT + 1,
        0,
        0,
        True,
    )


@pytest.mark.parametrize(
    ("spec", "description"),
    [
        ("10x", "Consuming from queue '{stream}' in vhost '/' failed: invalid_max_age"),
        ("3", "Consuming from queue '{stream}' in vhost '/' failed: invalid_max_age"),
        ("", None),  # 4.0.5's parser crashes: its description is an Erlang stack trace
    ],
)
def test_a_bad_offset_spec_ends_the_session(
    port: int, stream: str, spec: str, description: str | None
) -> None:
    client = _client(port)
    answer = attach_receiver(client, stream, filter_set=_spec(spec))
    client.close()
    assert isinstance(answer, tuple), answer
    end = answer[1]
    assert isinstance(end, End), answer
    assert isinstance(end.error, Error)
    assert end.error.condition == "amqp:internal-error"
    if description is not None:
        assert end.error.description == description.format(stream=stream)


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
    client = _client(port)
    outcomes = _publish10(client, empty_stream, *PUBLISHED_10)
    assert outcomes == [Accepted(), Accepted(), Accepted()]
    attach_receiver(client, empty_stream, filter_set=FIRST)
    everything = _deliveries(_drain(client, 10))
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
    client = _client(port)
    _publish10(client, empty_stream, *PUBLISHED_10)
    filter_set = {**FIRST, Symbol(FILTER): _described(FILTER, "red")}
    attach_receiver(client, empty_stream, filter_set=filter_set)
    offsets = _offsets(_drain(client, 10))
    client.close()
    assert offsets == [0]


def test_published_over_amqp10_read_over_amqp091(port: int, empty_stream: str) -> None:
    client = _client(port)
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


def test_proton_receiver_from_first(port: int, stream: str) -> None:
    """python-qpid-proton as the 4.0 clients attach: the offset spec a described string."""
    spec = Filter({symbol(OFFSET): ProtonDescribed(symbol(OFFSET), "first")})
    connection = BlockingConnection(proton_url(port))
    try:
        receiver = connection.create_receiver(f"/queues/{stream}", options=spec, credit=5)
        got = []
        for _ in COLOURS:
            message = receiver.receive(timeout=10)
            assert message.annotations is not None
            got.append((bytes(message.body), message.annotations["x-stream-offset"]))  # type: ignore[arg-type]
            receiver.accept()
    finally:
        connection.close()
    assert got == [(b"m%d" % offset, offset) for offset in range(5)]


def test_classic_queue_receiver_echoes_the_filter_set(port: int) -> None:
    name = f"amqp10-{uuid.uuid4().hex[:10]}"
    channel = pika_channel(port)
    channel.queue_declare(name)
    try:
        client = _client(port)
        attach = _attached(attach_receiver(client, name, filter_set=FIRST))
        client.close()
    finally:
        channel.queue_delete(name)
        channel.connection.close()
    assert isinstance(attach.source, Source)
    assert attach.source.filter == FIRST
