"""Stream queues over real sockets with pika and aio-pika: offsets, the x-stream-offset header, independent
consumers, tail consumers, acks that only return credit, refusals, and retention by size and age on the
manual clock. The same rules are diffed against RabbitMQ in tests/compat/scenarios/streams.py."""

from __future__ import annotations

import uuid
from typing import Any

import aio_pika
import pika
import pika.exceptions
import pytest

from broker.testing.embed import BrokerThread

STREAM = {"x-queue-type": "stream"}
TIMEOUT_S = 5.0


def _name() -> str:
    return f"stream-{uuid.uuid4().hex[:8]}"


def _publish(ch: Any, queue: str, bodies: list[bytes]) -> None:
    for body in bodies:
        ch.basic_publish("", queue, body, pika.BasicProperties(delivery_mode=2))


def _read(
    connection: pika.BlockingConnection, queue: str, offset: Any, count: int
) -> list[tuple[bytes, int]]:
    """Consume from ``offset`` with a prefetch of 3 and acks until ``count`` messages (or the timeout)."""
    ch = connection.channel()
    ch.basic_qos(prefetch_count=3)
    seen: list[tuple[bytes, int]] = []

    def on_message(c: Any, method: Any, props: Any, body: bytes) -> None:
        seen.append((body, props.headers["x-stream-offset"]))
        c.basic_ack(method.delivery_tag)

    tag = ch.basic_consume(queue, on_message, arguments={"x-stream-offset": offset})
    deadline = 50
    while len(seen) < count and deadline:
        connection.process_data_events(time_limit=0.1)
        deadline -= 1
    ch.basic_cancel(tag)
    return seen


@pytest.fixture
def stream(amqp_url: str) -> Any:
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    ch = connection.channel()
    name = _name()
    ch.queue_declare(name, durable=True, arguments=STREAM)
    ch.confirm_delivery()
    _publish(ch, name, [f"m{i}".encode() for i in range(5)])
    yield connection, name
    if connection.is_open:
        connection.channel().queue_delete(name)
        connection.close()


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        ("first", [0, 1, 2, 3, 4]),
        ("last", [4]),
        (2, [2, 3, 4]),
        (-5, [0, 1, 2, 3, 4]),
        ("1h", [0, 1, 2, 3, 4]),
    ],
)
def test_consume_from_offset_spec_with_offset_header(stream: Any, offset: Any, expected: list[int]) -> None:
    connection, name = stream
    seen = _read(connection, name, offset, len(expected))
    assert seen == [(f"m{i}".encode(), i) for i in expected]


def test_consumers_are_independent_and_acks_remove_nothing(stream: Any) -> None:
    connection, name = stream
    first = _read(connection, name, "first", 5)
    again = _read(connection, name, "first", 5)
    assert first == again
    assert len(first) == 5
    assert connection.channel().queue_declare(name, passive=True).method.message_count == 5


def test_next_consumer_gets_only_new_appends(stream: Any) -> None:
    connection, name = stream
    ch = connection.channel()
    ch.basic_qos(prefetch_count=10)
    seen: list[int] = []
    ch.basic_consume(
        name,
        lambda c, m, p, b: seen.append(p.headers["x-stream-offset"]),
        arguments={"x-stream-offset": "next"},
    )
    connection.process_data_events(time_limit=0.2)
    assert seen == []
    _publish(connection.channel(), name, [b"n5", b"n6"])
    for _ in range(50):
        if len(seen) == 2:
            break
        connection.process_data_events(time_limit=0.1)
    assert seen == [5, 6]


def test_prefetch_is_required_and_basic_get_is_refused(stream: Any, amqp_url: str) -> None:
    connection, name = stream
    ch = connection.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as no_qos:
        ch.basic_consume(name, lambda *_: None)
    assert no_qos.value.reply_code == 406
    assert no_qos.value.reply_text == (
        f"PRECONDITION_FAILED - consumer prefetch count is not set for 'queue '{name}' in vhost '/''"
    )
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as get:
        connection.channel().basic_get(name)
    assert get.value.reply_code == 540
    assert (
        get.value.reply_text
        == f"NOT_IMPLEMENTED - basic.get not supported by stream queues queue '{name}' in vhost '/'"
    )
    cleanup = pika.BlockingConnection(pika.URLParameters(amqp_url))
    cleanup.channel().queue_delete(name)
    cleanup.close()


def test_reject_with_requeue_closes_the_connection(stream: Any, amqp_url: str) -> None:
    connection, name = stream
    ch = connection.channel()
    ch.basic_qos(prefetch_count=1)
    tags: list[int] = []
    ch.basic_consume(
        name, lambda c, m, p, b: tags.append(m.delivery_tag), arguments={"x-stream-offset": "first"}
    )
    while not tags:
        connection.process_data_events(time_limit=0.1)
    ch.basic_reject(tags[0], requeue=True)
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        connection.process_data_events(time_limit=1.0)
    assert closed.value.reply_code == 540
    cleanup = pika.BlockingConnection(pika.URLParameters(amqp_url))
    cleanup.channel().queue_delete(name)
    cleanup.close()


@pytest.mark.parametrize("bad", [{"exclusive": True}, {"auto_delete": True}, {"durable": False}])
def test_stream_declare_refuses_non_durable_exclusive_and_auto_delete(
    amqp_url: str, bad: dict[str, bool]
) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    kwargs: dict[str, Any] = {"durable": True, **bad}
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        connection.channel().queue_declare(_name(), arguments=STREAM, **kwargs)
    assert refused.value.reply_code == 406
    connection.close()


async def test_aio_pika_replays_a_stream_from_first(amqp_url: str) -> None:
    connection = await aio_pika.connect(amqp_url, timeout=TIMEOUT_S)
    async with connection:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=2)
        name = _name()
        queue = await channel.declare_queue(name, durable=True, arguments={"x-queue-type": "stream"})
        for i in range(4):
            await channel.default_exchange.publish(aio_pika.Message(f"a{i}".encode()), routing_key=name)
        seen: list[tuple[bytes, Any]] = []
        async with queue.iterator(arguments={"x-stream-offset": "first"}, timeout=TIMEOUT_S) as messages:
            async for message in messages:
                await message.ack()
                seen.append((message.body, message.headers["x-stream-offset"]))
                if len(seen) == 4:
                    break
        assert seen == [(f"a{i}".encode(), i) for i in range(4)]
        await queue.delete()


# Segment sizes count as osiris's files (broker.core.streams.stream_file_bytes): a 10-byte persistent message
# to the default exchange is a chunk of about 180 bytes (137 right after a segment's snapshot), so 300-byte
# segments hold two messages, and every segment after the first opens with a snapshot taking one offset.
SEGMENT_OF_TWO = 300


def test_retention_by_size_and_age_on_the_manual_clock() -> None:
    with BrokerThread(manual_clock=True) as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = connection.channel()
        args = {
            **STREAM,
            "x-stream-max-segment-size-bytes": SEGMENT_OF_TWO,
            "x-max-age": "10s",
            "x-max-length-bytes": 2000,
        }
        ch.queue_declare("retained", durable=True, arguments=args)
        ch.confirm_delivery()
        _publish(ch, "retained", [b"x" * 10] * 2)  # segment [0, 1], closed at 0 s
        broker.advance_clock(6.0)
        _publish(ch, "retained", [b"z" * 10] * 2)  # segment [snapshot 2, 3, 4], closed at 6 s
        broker.advance_clock(5.0)
        _publish(ch, "retained", [b"y" * 10])  # at 11 s: [0, 1] is older than 10 s and goes whole
        seen = _read(connection, "retained", "first", 1)
        assert seen[0] == (b"z" * 10, 3)
        assert ch.queue_declare("retained", passive=True).method.message_count == 3
        connection.close()


def test_retention_waits_for_the_next_segment_roll() -> None:
    """osiris evaluates retention when a segment rolls over: a segment past x-max-age stays readable
    until then (tests/compat diffs this against RabbitMQ in real time)."""
    with BrokerThread(manual_clock=True) as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = connection.channel()
        args = {**STREAM, "x-stream-max-segment-size-bytes": SEGMENT_OF_TWO, "x-max-age": "10s"}
        ch.queue_declare("aged", durable=True, arguments=args)
        ch.confirm_delivery()
        _publish(ch, "aged", [b"x" * 10] * 3)  # segments [0, 1] and [snapshot 2, 3]
        broker.advance_clock(11.0)
        _publish(ch, "aged", [b"y" * 10])  # into [2, 3, 4]: no roll, [0, 1] stays although past 10 s
        assert _first(broker.url, "aged") == (b"x" * 10, 0)
        _publish(ch, "aged", [b"z" * 10])  # rolls [5, 6]: now [0, 1] goes; [2, 3, 4] was appended to at 11 s
        assert _first(broker.url, "aged") == (b"x" * 10, 3)


def _first(url: str, queue: str) -> tuple[bytes, int]:
    """The first message from ``first``: a prefetch of 1 and no ack, so that pika holds nothing it would
    nack on cancel (a stream refuses a nack with a connection error)."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    seen: list[tuple[bytes, int]] = []
    try:
        ch = connection.channel()
        ch.basic_qos(prefetch_count=1)
        ch.basic_consume(
            queue,
            lambda _c, _m, props, body: seen.append((body, props.headers["x-stream-offset"])),
            arguments={"x-stream-offset": "first"},
        )
        for _ in range(50):
            if seen:
                break
            connection.process_data_events(time_limit=0.1)
    finally:
        connection.close()
    return seen[0]


def test_retention_by_size_keeps_the_newest_whole_segments() -> None:
    with BrokerThread(manual_clock=True) as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = connection.channel()
        args = {**STREAM, "x-stream-max-segment-size-bytes": SEGMENT_OF_TWO, "x-max-length-bytes": 900}
        ch.queue_declare("sized", durable=True, arguments=args)
        ch.confirm_delivery()
        # Segments [0, 1] [2: 3, 4] [5: 6, 7] [8: 9] of 362, 422, 422 and 245 bytes: the newest two fit 900.
        _publish(ch, "sized", [b"x" * 10] * 7)
        assert ch.queue_declare("sized", passive=True).method.message_count == 3
        assert _read(connection, "sized", "first", 1)[0][1] == 6
        connection.close()


def test_filtering_delivers_matching_values_and_unfiltered_only_when_asked(amqp_url: str) -> None:
    """RabbitMQ 3.13 stream filtering (from its docs; the 3.10 oracle has none), filtered per message."""
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    ch = connection.channel()
    name = _name()
    ch.queue_declare(name, durable=True, arguments=STREAM)
    ch.confirm_delivery()
    for body, value in (
        ("ca", "california"),
        ("tx", "texas"),
        ("none", None),
        ("ca2", "california"),
        ("ny", "ny"),
    ):
        headers = {} if value is None else {"x-stream-filter-value": value}
        ch.basic_publish("", name, body.encode(), pika.BasicProperties(headers=headers))

    def read(arguments: dict[str, Any]) -> list[tuple[str, int]]:
        # Its own connection, closed at the end: pika's channel close would nack pending deliveries, which
        # streams refuse (540) as RabbitMQ does.
        reader = pika.BlockingConnection(pika.URLParameters(amqp_url))
        cch = reader.channel()
        cch.basic_qos(prefetch_count=1)  # skipped messages take no credit
        seen: list[tuple[str, int]] = []

        def on_message(c: Any, method: Any, props: Any, body: bytes) -> None:
            seen.append((body.decode(), props.headers["x-stream-offset"]))
            c.basic_ack(method.delivery_tag)

        cch.basic_consume(name, on_message, arguments={"x-stream-offset": "first", **arguments})
        for _ in range(5):  # process_data_events returns after the first callbacks ran
            reader.process_data_events(time_limit=0.1)
        reader.close()
        return seen

    assert read({"x-stream-filter": "california"}) == [("ca", 0), ("ca2", 3)]
    assert read({"x-stream-filter": ["texas", "ny"]}) == [("tx", 1), ("ny", 4)]
    assert read({"x-stream-filter": "texas", "x-stream-match-unfiltered": True}) == [("tx", 1), ("none", 2)]
    assert [body for body, _ in read({})] == ["ca", "tx", "none", "ca2", "ny"]
    ch.queue_delete(name)
    connection.close()


def test_a_reader_at_the_tail_of_a_full_segment_rolls_it_and_runs_retention() -> None:
    """On RabbitMQ 3.10.8 a consumer that catches up makes osiris's writer handle a batch, and the writer
    writes a tracking snapshot first when the segment is full: a new segment holding only the snapshot
    (one offset), and retention at once (diffed against the oracle in tests/compat/test_stream_offsets.py)."""
    with BrokerThread(manual_clock=True) as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = connection.channel()
        args = {**STREAM, "x-stream-max-segment-size-bytes": SEGMENT_OF_TWO, "x-max-length-bytes": 700}
        ch.queue_declare("waited", durable=True, arguments=args)
        ch.confirm_delivery()
        _publish(
            ch, "waited", [b"x" * 10] * 4
        )  # [0, 1] and [2: 3, 4], the second full: no roll without a reader
        stream = broker.broker.vhosts["/"].queues["waited"].features

        def layout() -> list[tuple[int, int]]:
            return [(s.first_offset, s.count) for s in stream.log.segments]  # type: ignore[union-attr]

        assert broker.call(layout) == [(0, 2), (2, 2)]
        assert _read(connection, "waited", "first", 4)[-1] == (b"x" * 10, 4)
        # The reader waits at the tail: the full segment rolled into [5] (its snapshot), and retention
        # (700 bytes: the 111-byte new segment and one full one) dropped [0, 1].
        assert broker.call(layout) == [(2, 2), (5, 0)]
        _publish(ch, "waited", [b"y" * 10])
        assert _read(connection, "waited", "last", 1) == [(b"y" * 10, 6)]
        connection.close()


def test_declare_ok_counts_no_consumers_on_a_stream(stream: Any) -> None:
    """rabbit_stream_queue:stat answers 0 consumers for a stream whoever reads it (3.10 to 4.x)."""
    connection, name = stream
    ch = connection.channel()
    ch.basic_qos(prefetch_count=1)
    acked: list[bytes] = []

    def ack(channel: Any, method: Any, _: Any, body: bytes) -> None:
        channel.basic_ack(method.delivery_tag)
        acked.append(body)

    ch.basic_consume(name, ack, arguments={"x-stream-offset": "first"})
    assert ch.queue_declare(name, passive=True).method.consumer_count == 0
    # Read to the end: pika nacks what it still buffers when its consumer goes, and a 3.x broker closes the
    # connection for a nack on a stream (540).
    while len(acked) < 5:
        connection.process_data_events(time_limit=0.1)
