"""protocol/_wire.c against the pure Python it stands in for: the same frames, errors and session output.

The C scanner hands a publish's method, header and body frames as one item; the session handles that item in
one call (`ChannelSession.on_publish`). Both must be invisible: on any stream, any chunking and any frame_max,
the frames (ungrouped), the errors and what a session writes back are those of the pure path. The delivery
encoder must give the same bytes. Skipped where the extension is not built (the pure variant's pass).
"""

from __future__ import annotations

import gc
import itertools
import struct
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pamqp import commands, frame, header
from pamqp.body import ContentBody

from broker.session.config import SessionConfig
from protocol import fastpath, framing
from protocol.errors import AMQPError, ProtocolHeaderError
from protocol.framing import (
    FRAME_ACK,
    FRAME_ACK_MULTIPLE,
    FRAME_PUBLISH,
    JOIN_BELOW,
    PROTOCOL_HEADER,
    FrameBuffer,
    ungrouped,
)
from tests.component.harness import Client

pytestmark = pytest.mark.skipif(
    framing._WIRE is None, reason="protocol._wire is not built, or pure asked for"
)


def encode(frame_type: int, channel: int, payload: bytes, end: int = 0xCE) -> bytes:
    return struct.pack("!BHI", frame_type, channel, len(payload)) + payload + bytes((end,))


def publish_method(exchange: bytes, routing_key: bytes, bits: int) -> bytes:
    return (
        b"\x00\x3c\x00\x28\x00\x00"
        + bytes((len(exchange),))
        + exchange
        + bytes((len(routing_key),))
        + (routing_key + bytes((bits,)))
    )


def content_header(
    body_size: int, class_id: int = 60, weight: int = 0, flags: int = 0, tail: bytes = b""
) -> bytes:
    return struct.pack("!HHQH", class_id, weight, body_size, flags) + tail


@st.composite
def publishes(draw: st.DrawFn) -> bytes:
    """The frames of one publish, mostly well-formed, sometimes bent the ways the scanner must not group."""
    channel = draw(st.sampled_from([1, 1, 1, 2, 0]))
    body = draw(st.binary(max_size=40))
    method = publish_method(draw(st.sampled_from([b"", b"amq.direct", b"x"])), b"rk", draw(st.integers(0, 3)))
    declared = len(body) + draw(st.sampled_from([0, 0, 0, 0, 1, -1]))
    head = content_header(
        max(declared, 0),
        class_id=draw(st.sampled_from([60, 60, 60, 50])),
        weight=draw(st.sampled_from([0, 0, 0, 1])),
        tail=draw(st.sampled_from([b"", b"", b"\x01"])),
    )
    parts = [encode(1, channel, method), encode(2, draw(st.sampled_from([channel, channel, 3])), head)]
    if body:
        split = draw(st.integers(0, len(body)))
        if split and split < len(body) and draw(st.booleans()):
            parts += [encode(3, channel, body[:split]), encode(3, channel, body[split:])]
        else:
            parts.append(encode(3, draw(st.sampled_from([channel, channel, 5])), body))
    if draw(st.integers(0, 9)) == 0:
        parts.pop(draw(st.integers(0, len(parts) - 1)))
    return b"".join(parts)


def ack(channel: int, tag: int, bits: int, size: int = 13) -> bytes:
    return encode(1, channel, struct.pack("!IQB", 0x003C0050, tag, bits)[:size])


acks = st.builds(ack, st.sampled_from([1, 2, 0]), st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 1, 2, 3]))

other_frames = st.one_of(
    st.just(encode(8, 0, b"")),
    acks,
    st.builds(ack, st.just(1), st.integers(0, 9), st.just(0), st.sampled_from([12, 4])),  # short: 501
    st.builds(encode, st.sampled_from([1, 2, 3]), st.integers(0, 3), st.binary(min_size=0, max_size=30)),
    # payloads either side of frame_max 40 (the size check is the scanner's to get exactly right)
    st.builds(encode, st.sampled_from([1, 2, 3]), st.integers(1, 2), st.binary(min_size=38, max_size=42)),
    st.binary(min_size=1, max_size=12),  # junk: bad types, bad frame-ends, oversized headers
)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def run(buffer: FrameBuffer, chunks: list[bytes]) -> list[Any]:
    """Per chunk: the frames (ungrouped) and the bytes still buffered; then the error, if any, as text."""
    log: list[Any] = []
    for chunk in chunks:
        try:
            log.append((ungrouped(buffer.feed(chunk)), buffer.buffered_bytes))
        except (AMQPError, ProtocolHeaderError) as error:
            frames = getattr(error, "frames", [])
            log.append((type(error).__name__, str(error), ungrouped(frames)))
            break
    return log


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(publishes(), publishes(), other_frames), max_size=12),
    st.lists(st.integers(0, 2000), max_size=8),
    st.sampled_from([0, 4096, 40]),
    st.booleans(),
    st.sampled_from([0, JOIN_BELOW]),
    st.sampled_from([0, JOIN_BELOW]),
)
def test_the_native_scanner_gives_the_pure_scanners_frames_and_errors(
    pieces: list[bytes], cuts: list[int], frame_max: int, with_header: bool, native_join: int, pure_join: int
) -> None:
    # Each side joins a buffered partial frame to the next read (JOIN_BELOW, for these short reads) or parses
    # it apart (0): the frames, the bytes left buffered and the errors may not depend on which.
    stream = (PROTOCOL_HEADER if with_header else b"") + b"".join(pieces)
    chunks = chunked(stream, cuts)
    native = FrameBuffer(frame_max, expect_protocol_header=with_header, native=True, join_below=native_join)
    pure = FrameBuffer(frame_max, expect_protocol_header=with_header, native=False, join_below=pure_join)
    assert run(native, chunks) == run(pure, chunks)


def test_a_whole_publish_is_one_item_and_anything_else_is_not() -> None:
    whole = (
        encode(1, 1, publish_method(b"", b"q", 0)) + encode(2, 1, content_header(3)) + encode(3, 1, b"abc")
    )
    empty = encode(1, 2, publish_method(b"x", b"", 1)) + encode(2, 2, content_header(0))
    acked = ack(1, 7, 0) + ack(2, 2**64 - 1, 1) + ack(1, 3, 2) + ack(0, 1, 0)
    split = encode(1, 1, publish_method(b"", b"q", 0)) + encode(2, 1, content_header(3))
    split += encode(3, 1, b"a") + encode(3, 1, b"bc")
    items = FrameBuffer(4096, expect_protocol_header=False, native=True).feed(whole + empty + acked + split)
    assert [item[0] for item in items[:6]] == [
        FRAME_PUBLISH,
        FRAME_PUBLISH,
        FRAME_ACK,
        FRAME_ACK_MULTIPLE,
        1,
        1,
    ]
    assert [item[0] for item in items[6:]] == [1, 2, 3, 3]
    assert items[2:4] == [(FRAME_ACK, 1, 7), (FRAME_ACK_MULTIPLE, 2, 2**64 - 1)]
    assert items[0] == (FRAME_PUBLISH, 1, (publish_method(b"", b"q", 0), content_header(3), b"abc"))
    assert items[1] == (FRAME_PUBLISH, 2, (publish_method(b"x", b"", 1), content_header(0), b""))
    assert ungrouped(items) == FrameBuffer(4096, expect_protocol_header=False, native=False).feed(
        whole + empty + acked + split
    )


def test_a_frame_buffer_is_plain_unless_asked_to_be_native() -> None:
    # A client reading the broker's frames (broker.bench; publisher confirms are basic.ack) wants them plain.
    stream = ack(1, 7, 0) + encode(1, 1, publish_method(b"", b"q", 0)) + encode(2, 1, content_header(0))
    plain = FrameBuffer(4096, expect_protocol_header=False).feed(stream)
    assert [item[0] for item in plain] == [1, 1, 2]
    assert ungrouped(FrameBuffer(4096, expect_protocol_header=False, native=True).feed(stream)) == plain


# -- the delivery encoder ---------------------------------------------------------------------------------

names = st.text(max_size=30).filter(lambda s: len(s.encode()) <= 255)


@settings(max_examples=400, deadline=None)
@given(
    st.integers(0, 0xFFFF),
    names,
    st.integers(0, 2**64 - 1),
    st.booleans(),
    names,
    names,
    st.binary(min_size=14, max_size=60),
    st.binary(max_size=300),
    st.sampled_from([0, 9, 10, 17, 64, 4096, 131072]),
)
def test_the_native_delivery_encoder_gives_the_pure_bytes(
    channel: int,
    consumer_tag: str,
    tag: int,
    redelivered: bool,
    exchange: str,
    routing_key: str,
    header_payload: bytes,
    body: bytes,
    frame_max: int,
) -> None:
    args = (channel, consumer_tag, tag, redelivered, exchange, routing_key, header_payload, body, frame_max)
    assert fastpath._WIRE is not None
    assert fastpath._WIRE.encode_basic_deliver_content(*args) == fastpath.py_encode_basic_deliver_content(
        *args
    )


@pytest.mark.parametrize("position", [1, 4, 5])
def test_a_short_string_over_255_bytes_is_refused_by_both_encoders(position: int) -> None:
    args: list[Any] = [1, "ctag", 1, False, "ex", "rk", b"\x00" * 14, b"body", 4096]
    args[position] = "é" * 128  # 256 bytes of UTF-8
    assert fastpath._WIRE is not None
    for encoder in (fastpath._WIRE.encode_basic_deliver_content, fastpath.py_encode_basic_deliver_content):
        with pytest.raises(ValueError, match="longer than 255 bytes"):
            encoder(*args)


# -- what a session writes back ----------------------------------------------------------------------------


def _publish_bytes(channel: int, body: bytes, exchange: str, bits: int, props: dict[str, Any]) -> bytes:
    method = encode(1, channel, publish_method(exchange.encode(), b"q", bits))
    head = frame.marshal(header.ContentHeader(0, len(body), commands.Basic.Properties(**props)), channel)
    return method + head + (frame.marshal(ContentBody(body), channel) if body else b"")


publish_ops = st.builds(
    _publish_bytes,
    st.sampled_from([1, 1, 2, 3]),  # channel 3 is never opened: 504
    st.binary(max_size=40),  # max_message_size is 32: a longer body is 406 on its channel
    st.sampled_from(["", "", "amq.fanout", "missing"]),  # a missing exchange: 404 on its channel
    st.sampled_from([0, 0, 0, 1, 2]),  # mandatory; immediate: 540 on the connection
    st.sampled_from(
        [{}, {}, {"delivery_mode": 2}, {"expiration": "bad"}, {"user_id": "other"}, {"headers": {"a": 1}}]
    ),
)


def _body_missing(channel: int, body_size: int) -> bytes:
    """A publish whose body never comes: what follows meets an assembler waiting for it (505)."""
    method = encode(1, channel, publish_method(b"", b"q", 0))
    return method + frame.marshal(header.ContentHeader(0, body_size, commands.Basic.Properties()), channel)


def _session(native: bool) -> Client:
    client = Client(config=SessionConfig(max_message_size=32))
    client.session.frames = FrameBuffer(client.session.config.pre_auth_frame_max, native=native)
    client.handshake()
    for channel in (1, 2):
        client.open_channel(channel)
    client.send(1, commands.Queue.Declare(queue="q"))
    client.send(1, commands.Queue.Bind(queue="q", exchange="amq.fanout"))
    client.send(2, commands.Basic.Consume(queue="q", consumer_tag="c"))
    client.received()
    return client


# An ack of the oldest (or, multiple, the newest) delivery the consumer holds, worked out when it is sent.
ACK_OLDEST, ACK_ALL = "ack-oldest", "ack-all"


def _next_ack(client: Client, kind: str) -> bytes:
    channel = client.session.channels.get(2)
    tags = [d.delivery_tag for d in channel.unacked.outstanding()] if channel is not None else []
    if not tags:
        return ack(2, 1, 0)  # nothing to ack: 406 unknown delivery tag, as any stray ack
    return ack(2, tags[0], 0) if kind == ACK_OLDEST else ack(2, tags[-1], 1)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(
                publish_ops,
                publish_ops,
                st.sampled_from([ACK_OLDEST, ACK_OLDEST, ACK_ALL]),
                st.builds(_body_missing, st.sampled_from([1, 2]), st.integers(1, 8)),
                # stray acks: unknown tags or bits, on the consumer's channel or the other (406 either way)
                st.builds(ack, st.sampled_from([2, 1]), st.integers(0, 6), st.sampled_from([0, 1, 2])),
            ),
            st.integers(0, 200),  # where the read is cut in two (past the end: one read)
        ),
        min_size=1,
        max_size=16,
    )
)
def test_a_session_answers_grouped_publishes_as_it_answers_their_frames(ops: list[tuple[Any, int]]) -> None:
    """Each op is a client's write, read whole or in two pieces; the broker's loop runs between reads, so
    deliveries go out and the acks that follow find them."""
    native, pure = _session(True), _session(False)
    for op, cut in ops:
        data = _next_ack(native, op) if isinstance(op, str) else op
        for chunk in (data[:cut], data[cut:]):
            native.feed(chunk)
            pure.feed(chunk)
            assert bytes(native.transport.buffer) == bytes(pure.transport.buffer)
            assert native.transport.closed == pure.transport.closed
            assert native.transport.close_after == pure.transport.close_after
    assert _counters(native) == _counters(pure)


def _counters(client: Client) -> list[Any]:
    """What the statistics and the unacked state say: the grouped paths must keep every counter."""
    vhost = client.broker.vhosts["/"]
    queue = vhost.queues.get("q")
    counters: list[Any] = [queue is None]
    if queue is not None:
        counters += [getattr(queue.stats, name) for name in type(queue.stats).FIELDS]
        counters += [queue.unacked, queue.unacked_bytes, queue.message_count, queue.ready_bytes]
        counters += [consumer.unacked for consumer in queue.consumers]
    for channel in client.session.channels.values():
        counters += [len(channel.unacked), channel.unacked.next_tag, *vars_of(channel.stats)]
    counters += vars_of(vhost.channel_totals)  # what closed channels counted
    return counters


def vars_of(stats: Any) -> list[Any]:
    # FIELDS, not __slots__: a mypyc-compiled class (setup.py MYPYC_MODULES) has no __slots__ attribute.
    return [getattr(stats, name) for name in type(stats).FIELDS]


class _Box:
    """A plain object the collector tracks (it may hold references)."""


def test_untrack_takes_an_object_out_of_the_collector_and_refcounting_still_frees_it() -> None:
    box = _Box()
    assert gc.is_tracked(box)
    assert fastpath.untrack(box) is box
    assert not gc.is_tracked(box)
    gone = weakref.ref(box)
    del box
    assert gone() is None
    assert fastpath.untrack(7) == 7  # not a container: as it is


def test_a_published_message_is_out_of_the_collector_s_sight() -> None:
    """channel_session untracks each message it builds from a publish (protocol/_wire.c says why)."""
    client = Client()
    client.handshake()
    client.open_channel()
    client.send(1, commands.Queue.Declare(queue="q"))
    client.publish(1, b"body", "q", headers={"a": [1, {"b": "c"}]})
    queue = client.broker.vhosts["/"].queues["q"]
    message = next(iter(queue.ready_envelopes())).message
    assert message.headers == {"a": [1, {"b": "c"}]}
    assert not gc.is_tracked(message)
