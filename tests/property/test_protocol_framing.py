"""FrameBuffer on random streams: valid frames survive any chunking; any bytes give frames or typed errors."""

from __future__ import annotations

import itertools
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import AMQPError, ProtocolHeaderError
from protocol.framing import JOIN_BELOW, PROTOCOL_HEADER, Frame, FrameBuffer

# A partial frame is joined to a short read and parsed apart from a long one: 0 and JOIN_BELOW make every
# read of these small streams take one path or the other.
_JOINS = st.sampled_from([0, JOIN_BELOW])

# (type, minimum payload): what rabbit_command_assembler:analyze_frame/2 accepts; heartbeats are empty.
_KINDS = [(1, 4), (2, 12), (3, 0)]


@st.composite
def frames(draw: st.DrawFn) -> Frame:
    if draw(st.integers(0, 9)) == 0:
        return (8, 0, b"")
    frame_type, minimum = draw(st.sampled_from(_KINDS))
    return (frame_type, draw(st.integers(0, 0xFFFF)), draw(st.binary(min_size=minimum, max_size=300)))


def encode(frame: Frame) -> bytes:
    frame_type, channel, payload = frame
    return struct.pack("!BHI", frame_type, channel, len(payload)) + payload + b"\xce"


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=200, deadline=None)
@given(st.lists(frames(), max_size=20), st.lists(st.integers(0, 10_000), max_size=30), st.booleans(), _JOINS)
def test_valid_frames_reassemble_identically_under_any_chunking(
    sent: list[Frame], cuts: list[int], with_header: bool, join_below: int
) -> None:
    stream = (PROTOCOL_HEADER if with_header else b"") + b"".join(map(encode, sent))
    buffer = FrameBuffer(4096, expect_protocol_header=with_header, join_below=join_below)
    received: list[Frame] = []
    for chunk in chunked(stream, cuts):
        received += buffer.feed(chunk)
    assert received == sent
    assert buffer.buffered_bytes == 0


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=600), st.lists(frames(), max_size=5).map(lambda fs: b"".join(map(encode, fs)))
    ),
    st.binary(max_size=40),
    st.lists(st.integers(0, 1000), max_size=10),
    st.sampled_from([0, 4096, 64]),
    st.booleans(),
    _JOINS,
)
def test_arbitrary_bytes_give_frames_or_a_typed_error(
    prefix: bytes, junk: bytes, cuts: list[int], frame_max: int, with_header: bool, join_below: int
) -> None:
    stream = (PROTOCOL_HEADER if with_header else b"") + prefix + junk
    buffer = FrameBuffer(frame_max, expect_protocol_header=with_header, join_below=join_below)
    try:
        for chunk in chunked(stream, cuts):
            for frame_type, channel, payload in buffer.feed(chunk):
                assert frame_type in {1, 2, 3, 8}
                assert 0 <= channel <= 0xFFFF
                assert isinstance(payload, bytes)
                assert frame_max == 0 or len(payload) <= frame_max
    except (AMQPError, ProtocolHeaderError):
        pass


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=8, max_size=8))
def test_only_the_0_9_1_and_0_9_headers_are_accepted(header: bytes) -> None:
    try:
        FrameBuffer(4096).feed(header)
    except ProtocolHeaderError:
        assert header not in {PROTOCOL_HEADER, b"AMQP\x01\x01\x00\x09"}
    else:
        assert header in {PROTOCOL_HEADER, b"AMQP\x01\x01\x00\x09"}
