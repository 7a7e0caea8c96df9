"""FrameBuffer: reassembly at every split point, RabbitMQ's frame checks and texts, the protocol header."""

from __future__ import annotations

import struct

import pytest
from pamqp import commands

from protocol import framing
from protocol.errors import FrameError, HardError, ProtocolHeaderError, ReplyCode
from protocol.framing import (
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    PROTOCOL_HEADER,
    Frame,
    FrameBuffer,
    FrameSyncError,
    unexpected_frame,
    ungrouped,
)
from tests.unit.protocol.reference import pamqp_frame

NATIVE = {"scan": False}


@pytest.fixture(autouse=True, params=["python", "native"])
def scanner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the pure scanner and on protocol._wire's (where it is built)."""
    if request.param == "native" and framing._WIRE is None:
        pytest.skip("protocol._wire is not built (or WARRENMQ_PURE is set)")
    monkeypatch.setitem(NATIVE, "scan", request.param == "native")
    return str(request.param)


def buffer_of(max_frame_size: int, expect_protocol_header: bool = True) -> FrameBuffer:
    return FrameBuffer(max_frame_size, expect_protocol_header, native=NATIVE["scan"])


def feed(buffer: FrameBuffer, data: bytes) -> list[Frame]:
    """What a feed returns, a grouped publish counted as its three frames."""
    return ungrouped(buffer.feed(data))


def raw_frame(frame_type: int, channel: int, payload: bytes, end: int = 0xCE) -> bytes:
    return struct.pack("!BHI", frame_type, channel, len(payload)) + payload + bytes((end,))


PUBLISH = pamqp_frame(commands.Basic.Publish(exchange="x", routing_key="rk"), 1)
HEADER = raw_frame(FRAME_HEADER, 1, b"\x00\x3c\x00\x00" + (5).to_bytes(8, "big") + b"\x00\x00")
BODY = raw_frame(FRAME_BODY, 1, b"hello")
HEARTBEAT = raw_frame(FRAME_HEARTBEAT, 0, b"")
STREAM = PROTOCOL_HEADER + PUBLISH + HEADER + BODY + HEARTBEAT
EXPECTED = [
    (FRAME_METHOD, 1, PUBLISH[7:-1]),
    (FRAME_HEADER, 1, HEADER[7:-1]),
    (FRAME_BODY, 1, b"hello"),
    (FRAME_HEARTBEAT, 0, b""),
]


def test_one_feed_returns_every_frame_in_order() -> None:
    assert feed(buffer_of(4096), STREAM) == EXPECTED


@pytest.mark.parametrize("split", range(len(STREAM) + 1))
def test_a_stream_split_at_any_byte_reassembles_identically(split: int) -> None:
    buffer = buffer_of(4096)
    frames = feed(buffer, STREAM[:split])
    frames += feed(buffer, STREAM[split:])
    assert frames == EXPECTED
    assert buffer.buffered_bytes == 0


def test_byte_by_byte_feeding_reassembles_identically() -> None:
    buffer = buffer_of(4096)
    frames = []
    for i in range(len(STREAM)):
        frames += feed(buffer, STREAM[i : i + 1])
    assert frames == EXPECTED


def test_partial_frame_stays_buffered() -> None:
    buffer = buffer_of(4096, expect_protocol_header=False)
    assert feed(buffer, BODY[:-1]) == []
    assert buffer.buffered_bytes == len(BODY) - 1
    assert feed(buffer, BODY[-1:]) == [(FRAME_BODY, 1, b"hello")]
    assert buffer.buffered_bytes == 0


def test_oversized_frame_is_rejected_from_its_header_alone() -> None:
    buffer = buffer_of(131072, expect_protocol_header=False)
    with pytest.raises(FrameError) as raised:
        feed(buffer, struct.pack("!BHI", FRAME_BODY, 1, 200000))  # 7 bytes, no payload yet
    assert raised.value.code is ReplyCode.FRAME_ERROR
    # rabbit_reader: fatal_frame_error({frame_too_large, PayloadSize, FrameMax - ?EMPTY_FRAME_SIZE}, ...)
    assert (
        raised.value.reply_text == "FRAME_ERROR - type 3, all octets = <<>>: {frame_too_large,200000,131064}"
    )


def test_payload_may_reach_frame_max_thanks_to_rabbitmqs_fudge() -> None:
    # PayloadSize > FrameMax - 8 + 8 is the refusal test: a payload of exactly frame_max is accepted.
    buffer = buffer_of(4096, expect_protocol_header=False)
    assert feed(buffer, raw_frame(FRAME_BODY, 1, b"x" * 4096)) == [(FRAME_BODY, 1, b"x" * 4096)]
    with pytest.raises(FrameError, match="frame_too_large,4097,4088"):
        feed(buffer, raw_frame(FRAME_BODY, 1, b"x" * 4097))


def test_frame_max_zero_means_no_limit() -> None:
    buffer = buffer_of(0, expect_protocol_header=False)
    assert feed(buffer, raw_frame(FRAME_BODY, 1, b"x" * 70000))[0][2] == b"x" * 70000


def test_raised_frame_max_applies_to_the_next_frame() -> None:
    buffer = buffer_of(4096, expect_protocol_header=False)
    buffer.max_frame_size = 131072
    assert len(feed(buffer, raw_frame(FRAME_BODY, 1, b"x" * 100000))[0][2]) == 100000


def test_bad_frame_end_octet_is_a_frame_error_with_rabbitmqs_text() -> None:
    with pytest.raises(FrameSyncError) as raised:
        feed(buffer_of(4096, expect_protocol_header=False), raw_frame(FRAME_BODY, 1, b"abc", end=0))
    assert (
        raised.value.reply_text
        == 'FRAME_ERROR - type 3, all octets = <<"abc">>: {invalid_frame_end_marker,0}'
    )


def test_unknown_frame_type_is_a_frame_error_once_the_frame_is_read() -> None:
    buffer = buffer_of(4096, expect_protocol_header=False)
    assert feed(buffer, raw_frame(9, 1, b"\x00\x01")[:-1]) == []
    with pytest.raises(FrameSyncError) as raised:
        feed(buffer, b"\xce")
    assert raised.value.reply_text == "FRAME_ERROR - type 9, all octets = <<0,1>>: unknown_frame"


@pytest.mark.parametrize(
    ("frame_type", "payload"),
    [(FRAME_METHOD, b"\x00\x0a"), (FRAME_HEADER, b"\x00" * 11), (FRAME_HEARTBEAT, b"\x00")],
)
def test_payloads_analyze_frame_cannot_match_are_unknown_frames(frame_type: int, payload: bytes) -> None:
    with pytest.raises(FrameSyncError, match="unknown_frame"):
        feed(buffer_of(4096, expect_protocol_header=False), raw_frame(frame_type, 0, payload))


def test_long_payload_snippet_shows_first_16_octets() -> None:
    with pytest.raises(FrameSyncError) as raised:
        feed(buffer_of(4096, expect_protocol_header=False), raw_frame(FRAME_BODY, 1, bytes(range(20)), end=1))
    assert "type 3, first 16 octets = <<0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15>>" in raised.value.text


def test_frames_before_a_bad_frame_travel_with_the_error() -> None:
    with pytest.raises(FrameSyncError) as raised:
        feed(buffer_of(4096, expect_protocol_header=False), BODY + raw_frame(FRAME_BODY, 1, b"", end=0))
    assert ungrouped(raised.value.frames) == [(FRAME_BODY, 1, b"hello")]


@pytest.mark.parametrize(
    "header",
    [
        b"AMQP\x00\x00\x09\x00",  # another revision
        b"AMQP\x00\x00\x08\x00",  # 0-8
        b"AMQP\x03\x01\x00\x00",  # AMQP 1.0 SASL
        b"AMQP\x00\x01\x00\x00",  # AMQP 1.0
        b"GET / HTTP/1.1\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01",  # TLS ClientHello
        b"\x01\x00\x00\x00\x00\x00\x05\x00",  # a frame, no header
    ],
)
def test_bad_protocol_headers_are_refused(header: bytes) -> None:
    with pytest.raises(ProtocolHeaderError):
        feed(buffer_of(4096), header)


def test_protocol_header_needs_all_eight_bytes_first() -> None:
    buffer = buffer_of(4096)
    assert feed(buffer, b"GET ") == []  # rabbit_reader waits for 8 bytes too
    with pytest.raises(ProtocolHeaderError, match="detected_http_get"):
        feed(buffer, b"/ HT")


def test_amqp_0_9_header_is_accepted_as_0_9_1() -> None:
    # version_negotiation({1, 1, 0, 9}, ...) -> start_091_connection
    assert feed(buffer_of(4096), b"AMQP\x01\x01\x00\x09" + HEARTBEAT) == [(FRAME_HEARTBEAT, 0, b"")]


def test_unexpected_frame_text_matches_rabbit_reader() -> None:
    error = unexpected_frame(FRAME_HEARTBEAT, b"")
    assert isinstance(error, HardError)
    assert error.reply_text == "UNEXPECTED_FRAME - type 8, all octets = <<>>"
