"""codec: method decoding with RabbitMQ's errors, validation-free encoding, content splitting, properties."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from pamqp import commands

from protocol.codec import (
    BASIC_PUBLISH,
    HEARTBEAT_FRAME,
    AccessRequest,
    AccessRequestOk,
    decode_method,
    decode_properties,
    encode_content,
    encode_header_payload,
    encode_heartbeat,
    encode_method,
    make_method,
    method_frame_id,
)
from protocol.errors import HardError, ReplyCode
from protocol.framing import FrameBuffer
from tests.unit.protocol.reference import build, pamqp_frame, payload_of


def test_decode_method_returns_the_pamqp_command() -> None:
    wire = pamqp_frame(commands.Queue.Declare(queue="q", durable=True, arguments={"x-max-length": 5}))
    method = decode_method(payload_of(wire))
    assert isinstance(method, commands.Queue.Declare)
    assert (method.queue, method.durable, method.exclusive, method.arguments) == (
        "q",
        True,
        False,
        {"x-max-length": 5},
    )


def test_decode_method_accepts_names_pamqps_validation_would_reject() -> None:
    wire = pamqp_frame(
        build(
            commands.Queue.Delete, ticket=0, queue="ünï cöde!", if_unused=False, if_empty=True, nowait=False
        )
    )
    method = decode_method(payload_of(wire))
    assert isinstance(method, commands.Queue.Delete)
    assert (method.queue, method.if_empty) == ("ünï cöde!", True)


def test_unknown_method_id_is_command_invalid() -> None:
    with pytest.raises(HardError) as raised:
        decode_method(b"\x00\x3c\x00\x63")
    assert (raised.value.code, raised.value.class_id, raised.value.method_id) == (
        ReplyCode.COMMAND_INVALID,
        60,
        99,
    )


def test_trailing_bytes_are_cannot_decode_like_the_generated_decoder() -> None:
    payload = payload_of(pamqp_frame(commands.Channel.Open())) + b"\x00"
    with pytest.raises(HardError) as raised:
        decode_method(payload)
    assert raised.value.reply_text == "FRAME_ERROR - cannot decode <<1,48,0>>"  # out-of-band "0", then junk
    assert (raised.value.class_id, raised.value.method_id) == (20, 10)


def test_truncated_short_string_is_cannot_decode() -> None:
    # pamqp alone would silently return the truncated string.
    with pytest.raises(HardError) as raised:
        decode_method(b"\x00\x14\x00\x0a\x05ab")
    assert raised.value.code is ReplyCode.FRAME_ERROR


def test_invalid_utf8_in_short_string_is_rabbitmqs_assert_utf8_error() -> None:
    with pytest.raises(HardError) as raised:
        decode_method(b"\x00\x32\x00\x0a\x00\x00\x02\xff\xfe\x00\x00\x00\x00\x00")
    assert raised.value.reply_text == "FRAME_ERROR - Malformed UTF-8 in shortstr"


def test_malformed_table_is_a_typed_error() -> None:
    payload = b"\x00\x32\x00\x0a\x00\x00\x01q\x00\x00\x00\x00\x05\x01k?xxx"
    with pytest.raises(HardError):
        decode_method(payload)


def test_deeply_nested_table_decodes_without_recursion() -> None:
    # RabbitMQ's parse_table/1 accepts any depth; ours is iterative, so 30,000 levels (far beyond Python's
    # recursion limit) decode.
    table = b""
    for _ in range(30_000):
        table = b"\x01kF" + struct.pack("!I", len(table)) + table
    payload = b"\x00\x32\x00\x0a\x00\x00\x01q\x00" + struct.pack("!I", len(table)) + table
    method = decode_method(payload)
    assert isinstance(method, commands.Queue.Declare)
    depth = 0
    node: Any = method.arguments
    while node:
        node = node["k"]
        depth += 1
    assert depth == 30_000


def test_access_request_is_known_though_pamqp_lacks_it() -> None:
    method = decode_method(encode_method(1, AccessRequest())[7:-1])
    assert isinstance(method, AccessRequest)
    assert encode_method(1, AccessRequestOk()) == b"\x01\x00\x01\x00\x00\x00\x06\x00\x1e\x00\x0b\x00\x01\xce"


def test_encode_method_matches_pamqp_and_skips_validation() -> None:
    close = commands.Connection.Close(
        reply_code=320, reply_text="CONNECTION_FORCED - bye", class_id=0, method_id=0
    )
    assert encode_method(0, close) == pamqp_frame(close, 0)
    unicode_ok = make_method(commands.Queue.DeclareOk, queue="ünïcode", message_count=3, consumer_count=1)
    assert encode_method(2, unicode_ok) == pamqp_frame(unicode_ok, 2)


def test_encode_method_takes_bytes_for_long_strings() -> None:
    start = make_method(commands.Connection.Start, mechanisms=b"PLAIN AMQPLAIN", locales=b"en_US")
    decoded = decode_method(encode_method(0, start)[7:-1])
    assert isinstance(decoded, commands.Connection.Start)
    assert (decoded.mechanisms, decoded.locales, decoded.version_major, decoded.version_minor) == (
        "PLAIN AMQPLAIN",
        "en_US",
        0,
        9,
    )


def test_make_method_uses_defaults_and_rejects_unknown_fields() -> None:
    assert make_method(commands.Basic.Cancel, consumer_tag="c").nowait is False
    with pytest.raises(TypeError):
        make_method(commands.Basic.Cancel, bogus=1)


def test_heartbeat_frame() -> None:
    assert encode_heartbeat() == HEARTBEAT_FRAME == b"\x08\x00\x00\x00\x00\x00\x00\xce"


def test_method_frame_id() -> None:
    assert (
        method_frame_id(payload_of(pamqp_frame(commands.Basic.Publish()))) == BASIC_PUBLISH == (60 << 16) | 40
    )


HEADER_PAYLOAD = encode_header_payload(0, commands.Basic.Properties(content_type="text/plain"))


def split(frames: list[bytes]) -> list[tuple[int, int, bytes]]:
    return FrameBuffer(0, expect_protocol_header=False).feed(b"".join(frames))


@pytest.mark.parametrize(
    ("body_size", "frame_max", "sizes"),
    [
        (0, 4096, []),  # header frame only
        (1, 4096, [1]),
        (4088, 4096, [4088]),  # exactly one full frame
        (4089, 4096, [4088, 1]),
        (3 * 4088, 4096, [4088, 4088, 4088]),  # exact multiple: no empty trailing frame
        (10000, 0, [10000]),  # frame_max 0: no limit, one frame
    ],
)
def test_encode_content_splits_at_frame_max_minus_8(body_size: int, frame_max: int, sizes: list[int]) -> None:
    body = bytes(i % 251 for i in range(body_size))
    frames = split(encode_content(7, HEADER_PAYLOAD, body, frame_max))
    assert frames[0] == (2, 7, HEADER_PAYLOAD)
    assert [len(payload) for _, _, payload in frames[1:]] == sizes
    assert all(frame_type == 3 and channel == 7 for frame_type, channel, _ in frames[1:])
    assert b"".join(payload for _, _, payload in frames[1:]) == body


def test_properties_round_trip_through_pamqp() -> None:
    properties = commands.Basic.Properties(
        content_type="application/json", headers={"k": [1, "v"]}, priority=4
    )
    payload = encode_header_payload(42, properties)
    assert payload[:12] == b"\x00\x3c\x00\x00" + (42).to_bytes(8, "big")
    decoded = decode_properties(payload)
    assert (decoded.content_type, decoded.headers, decoded.priority) == (
        "application/json",
        {"k": [1, "v"]},
        4,
    )


def test_malformed_properties_are_a_typed_error() -> None:
    with pytest.raises(HardError):
        decode_properties(b"\x00\x3c\x00\x00" + bytes(8) + b"\x20\x00\x00\x00\x00\x09\x01kS")
