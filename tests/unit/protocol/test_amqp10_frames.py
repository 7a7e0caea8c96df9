"""AMQP 1.0 frames and the frame scanner (part 2, 2.2-2.3), with rabbit_amqp_reader's framing-error texts."""

from __future__ import annotations

import struct

import pytest

from protocol.amqp10.encode import encode
from protocol.amqp10.errors import FRAMING_ERROR, FramingError, ProtocolHeaderMismatch
from protocol.amqp10.frames import (
    AMQP_HEADER,
    HEARTBEAT,
    SASL_HEADER,
    TYPE_AMQP,
    TYPE_SASL,
    Frame,
    FrameScanner,
    ProtocolHeader,
    encode_frame,
)
from protocol.amqp10.performatives import Open, decode_performative, encode_performative
from protocol.amqp10.sasl import SaslInit, SaslOutcome
from protocol.amqp10.types import Symbol


def test_the_heartbeat_is_an_empty_frame() -> None:
    # rabbit_amqp_reader's heartbeat: size 8, doff 2, type 0, channel 0.
    assert bytes.fromhex("0000000802000000") == HEARTBEAT
    assert FrameScanner(expect_header=False).feed(HEARTBEAT) == [Frame(TYPE_AMQP, 0, b"")]


def test_a_frame_with_an_extended_header() -> None:
    frame = encode_frame(b"body", channel=7, extended_header=b"\x01\x02\x03\x04")
    assert frame[:8] == struct.pack(">IBBH", 16, 3, 0, 7)
    (item,) = FrameScanner(expect_header=False).feed(frame)
    assert item == Frame(TYPE_AMQP, 7, b"body", b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="4-octet words"):
        encode_frame(b"", extended_header=b"\x00")


def test_sasl_then_amqp_pipelined_in_one_read() -> None:
    init = SaslInit(mechanism=Symbol("ANONYMOUS"))
    open_ = Open(container_id="c")
    stream = (
        SASL_HEADER
        + encode_frame(encode(init), frame_type=TYPE_SASL)
        + AMQP_HEADER
        + encode_frame(encode_performative(open_))
    )
    scanner = FrameScanner()
    items = scanner.feed(stream)
    assert items[0] == ProtocolHeader(SASL_HEADER)
    assert items[1] == Frame(TYPE_SASL, 0, encode(init))
    assert items[2] == ProtocolHeader(AMQP_HEADER)
    assert isinstance(items[3], Frame)
    assert decode_performative(items[3].body) == (open_, b"")
    assert scanner.frame_type == TYPE_AMQP


def test_an_unsupported_protocol_header_is_refused_with_what_was_sent() -> None:
    with pytest.raises(ProtocolHeaderMismatch) as raised:
        FrameScanner().feed(b"AMQP\x00\x00\x09\x01")
    assert raised.value.header == b"AMQP\x00\x00\x09\x01"
    # Only the AMQP header accepted, e.g. once SASL is done.
    scanner = FrameScanner(accepted_headers=frozenset({AMQP_HEADER}))
    with pytest.raises(ProtocolHeaderMismatch):
        scanner.feed(SASL_HEADER)


def test_expect_protocol_header_after_a_sasl_outcome() -> None:
    scanner = FrameScanner()
    scanner.feed(SASL_HEADER)
    outcome = encode_frame(encode(SaslOutcome(code=0)), frame_type=TYPE_SASL)
    assert scanner.feed(outcome) == [Frame(TYPE_SASL, 0, encode(SaslOutcome(code=0)))]
    scanner.expect_protocol_header()
    assert scanner.feed(AMQP_HEADER) == [ProtocolHeader(AMQP_HEADER)]


@pytest.mark.parametrize(
    ("header", "text"),
    [
        (struct.pack(">IBBH", 7, 2, 0, 0), "frame size (7 bytes) < minimum frame size (8 bytes)"),
        (struct.pack(">IBBH", 513, 2, 0, 0), "frame size (513 bytes) > maximum frame size (512 bytes)"),
        (struct.pack(">IBBH", 8, 1, 0, 0), "data offset (1) < minimum data offset (2)"),
        (struct.pack(">IBBH", 12, 4, 0, 0), "data offset (16 bytes) > frame size (12 bytes)"),
        (struct.pack(">IBBH", 8, 2, 1, 0), "unexpected frame type 1 in amqp mode (expected 0)"),
    ],
)
def test_framing_errors_are_raised_on_the_header_before_the_body_arrives(header: bytes, text: str) -> None:
    scanner = FrameScanner(frame_type=TYPE_AMQP, expect_header=False)
    with pytest.raises(FramingError) as raised:
        scanner.feed(header)  # the header alone: nothing of the body is waited for
    assert raised.value.condition == FRAMING_ERROR
    assert raised.value.description == text


def test_a_framing_error_carries_the_frames_read_before_it() -> None:
    scanner = FrameScanner(expect_header=False)
    with pytest.raises(FramingError) as raised:
        scanner.feed(HEARTBEAT + struct.pack(">IBBH", 8, 2, 9, 0))
    assert raised.value.description == "unexpected frame type 9"
    assert raised.value.frames == [Frame(TYPE_AMQP, 0, b"")]


def test_the_limit_follows_the_negotiated_max_frame_size() -> None:
    scanner = FrameScanner(expect_header=False)
    big = encode_frame(b"x" * 1000)
    with pytest.raises(FramingError):
        FrameScanner(expect_header=False).feed(big)
    scanner.max_frame_size = 1008
    assert scanner.feed(big) == [Frame(TYPE_AMQP, 0, b"x" * 1000)]
    assert scanner.buffered_bytes == 0
