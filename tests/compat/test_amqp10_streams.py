"""Streams over AMQP 1.0: a receiver link on a stream queue, started by the source's
`rabbitmq:stream-offset-spec` and filtered by `rabbitmq:stream-filter` / `rabbitmq:stream-match-unfiltered`,
each transfer annotated with its `x-stream-offset`; settlement, credit and drain on a stream (publishing into
one over 1.0: test_amqp10_streams_publish.py). Each case runs against WarrenMQ
(--profile rabbitmq-4.0) and RabbitMQ 4.0.5 (skipped with the reason when podman or its image is missing);
the expected values are 4.0.5's.

Every read ends at something the broker sends (a drain's closing flow, an echoed flow, a session's end), so an
assertion that nothing more was delivered waits on no timer."""

from __future__ import annotations

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
from protocol.amqp10.message import encode_sections
from protocol.amqp10.performatives import Disposition, End, Flow
from protocol.amqp10.sections import (
    Data,
    Header,
    MessageAnnotations,
)
from protocol.amqp10.terminus import Source
from protocol.amqp10.types import Array, Symbol, Timestamp, UInt, ULong
from tests.compat.amqp10_support import (
    BROKERS,
    INITIAL_DELIVERY_COUNT,
    OFFSET_SPEC,
    attach_receiver,
    attached,
    broker_port,
    credit,
    declare_stream,
    deliveries,
    described,
    drain,
    offset_spec,
    open_session,
    performatives,
    pika_channel,
    proton_url,
    publish_one,
    stream_offsets,
)

pytestmark = pytest.mark.compat

OFFSET = OFFSET_SPEC
FILTER = "rabbitmq:stream-filter"
UNFILTERED = "rabbitmq:stream-match-unfiltered"
# Five messages m0..m4 at offsets 0..4, tagged red, none, blue, red, none.
COLOURS = ("red", None, "blue", "red", None)
FIRST = offset_spec("first")


@pytest.fixture(params=BROKERS)
def port(request: pytest.FixtureRequest) -> int:
    return broker_port(request, request.param)


@pytest.fixture
def stream(port: int) -> Iterator[str]:
    """A stream holding m0..m4 (COLOURS as their x-stream-filter-value), published with pika."""
    name, channel = declare_stream(port)
    for index, colour in enumerate(COLOURS):
        headers = {"x-stream-filter-value": colour} if colour else {}
        channel.basic_publish("", name, b"m%d" % index, pika.BasicProperties(headers=headers))
    try:
        yield name
    finally:
        channel.queue_delete(name)
        channel.connection.close()


@pytest.mark.parametrize(
    ("filter_set", "offsets"),
    [
        (FIRST, [0, 1, 2, 3, 4, 5]),
        (offset_spec("last"), [4, 5]),
        (offset_spec("next"), [5]),
        (offset_spec(ULong(2)), [2, 3, 4, 5]),
        (offset_spec(3), [3, 4, 5]),  # a long
        (offset_spec(-1), [0, 1, 2, 3, 4, 5]),  # before the head: the head
        (offset_spec(Timestamp(0)), [0, 1, 2, 3, 4, 5]),
        (offset_spec("1h"), [0, 1, 2, 3, 4, 5]),
        # What 4.0.5 does not read as a spec starts at next.
        (offset_spec(Symbol("first")), [5]),
        (offset_spec(True), [5]),
        ({Symbol(OFFSET): 3}, [3, 4, 5]),  # not described: read as it is
        ({Symbol(OFFSET): described("example:other", 3)}, [5]),
        ({Symbol("from-start"): described(OFFSET, "first")}, [5]),  # found by its key, not its descriptor
        (None, [5]),
    ],
    ids=lambda value: "none" if value is None else repr(value)[-24:],
)
def test_offset_spec(port: int, stream: str, filter_set: dict[Any, Any] | None, offsets: list[int]) -> None:
    client = open_session(port)
    attach = attached(attach_receiver(client, stream, filter_set=filter_set))
    publish_one(port, stream, b"m5")
    # Every case ends at m5, published after the attach (a drain could end before a stream reader sees it).
    credit(client, 10)
    items = client.read_until(lambda items: 5 in stream_offsets(items))
    client.close()
    # The filter-set comes back whole, whatever of it was read.
    assert isinstance(attach.source, Source)
    assert attach.source.filter == filter_set
    assert stream_offsets(items) == offsets
    bodies = [message.body for _, message in deliveries(items)]
    assert bodies == [(Data(b"m%d" % offset),) for offset in offsets]


def test_an_offset_past_the_tail_is_waited_for(port: int, stream: str) -> None:
    """4.0.5 starts a receiver attached at offset 7 of a stream whose tail is 5 at 7, not at the tail."""
    client = open_session(port)
    attached(attach_receiver(client, stream, filter_set=offset_spec(7)))
    for index in (5, 6, 7):
        publish_one(port, stream, b"m%d" % index)
    credit(client, 10)
    items = client.read_until(lambda items: 7 in stream_offsets(items))
    client.close()
    assert stream_offsets(items) == [7]


def test_delivery_sections(port: int, stream: str) -> None:
    """The header and the annotations of a stream delivery, byte for byte: x-stream-offset as a long, last."""
    client = open_session(port)
    attach_receiver(client, stream, filter_set=offset_spec(ULong(3)))
    credit(client, 1)
    ((transfer, message),) = deliveries(client.read_count(1))
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
    filter_set = {**FIRST, Symbol(FILTER): described(FILTER, wanted)}
    if unfiltered is not None:
        filter_set[Symbol(UNFILTERED)] = described(UNFILTERED, unfiltered)
    client = open_session(port)
    attached(attach_receiver(client, stream, filter_set=filter_set))
    items = drain(client, 10)
    client.close()
    assert stream_offsets(items) == offsets


@pytest.mark.parametrize(
    "outcome",
    [Accepted(), Released(), Rejected(), Modified(delivery_failed=True), Modified(undeliverable_here=True)],
    ids=lambda outcome: repr(outcome)[:40],
)
def test_every_outcome_settles_a_stream_delivery(port: int, stream: str, outcome: Any) -> None:
    """Released, rejected or modified, a stream's delivery is not read again: the reader goes on."""
    client = open_session(port)
    attach_receiver(client, stream, filter_set=FIRST)
    credit(client, 2)
    assert stream_offsets(client.read_count(2)) == [0, 1]
    client.perform(Disposition(role=True, first=0, last=1, settled=True, state=outcome))
    items = drain(client, 10, INITIAL_DELIVERY_COUNT + 2)
    client.close()
    assert not [p for p in performatives(items) if isinstance(p, End | Disposition)]
    assert stream_offsets(items) == [2, 3, 4]


def test_settled_receiver(port: int, stream: str) -> None:
    """snd-settle-mode settled reads a stream too (0-9-1's auto-ack is refused on one): transfers settled."""
    client = open_session(port)
    attach = attached(attach_receiver(client, stream, settled=True, filter_set=FIRST))
    items = drain(client, 3)
    client.close()
    assert attach.snd_settle_mode == 1
    assert [transfer.settled for transfer, _ in deliveries(items)] == [True, True, True]


def test_credit_and_available(port: int, stream: str) -> None:
    """Credit bounds the transfers; an echoed flow's available counts what the reader has still to read."""
    client = open_session(port)
    attach_receiver(client, stream, filter_set=FIRST)
    credit(client, 0, echo=True)
    (echoed,) = performatives(client.read_count(1))
    credit(client, 2)
    assert stream_offsets(client.read_count(2)) == [0, 1]
    credit(client, 0, INITIAL_DELIVERY_COUNT + 2, echo=True)
    (after,) = performatives(client.read_count(1))
    client.close()
    assert isinstance(echoed, Flow)
    assert isinstance(after, Flow)
    assert (echoed.delivery_count, echoed.link_credit, echoed.available) == (INITIAL_DELIVERY_COUNT, 0, 5)
    assert (after.delivery_count, after.link_credit, after.available) == (INITIAL_DELIVERY_COUNT + 2, 0, 3)


def test_drain_at_the_tail(port: int, stream: str) -> None:
    client = open_session(port)
    attach_receiver(client, stream, filter_set=offset_spec("next"))
    items = drain(client, 1)
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
    client = open_session(port)
    answer = attach_receiver(client, stream, filter_set=offset_spec(spec))
    client.close()
    assert isinstance(answer, tuple), answer
    end = answer[1]
    assert isinstance(end, End), answer
    assert isinstance(end.error, Error)
    assert end.error.condition == "amqp:internal-error"
    if description is not None:
        assert end.error.description == description.format(stream=stream)


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
        client = open_session(port)
        attach = attached(attach_receiver(client, name, filter_set=FIRST))
        client.close()
    finally:
        channel.queue_delete(name)
        channel.connection.close()
    assert isinstance(attach.source, Source)
    assert attach.source.filter == FIRST
