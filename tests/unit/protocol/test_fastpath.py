"""fastpath: hot decoders/encoders against pamqp on fixed cases, and their RabbitMQ errors on bad input."""

from __future__ import annotations

import pytest
from pamqp import commands

from protocol.content_header import HeaderInfo, parse_content_header, read_content_header
from protocol.errors import HardError, ReplyCode
from protocol.fastpath import (
    decode_basic_ack,
    decode_basic_nack,
    decode_basic_publish,
    decode_basic_reject,
    encode_basic_ack,
    encode_basic_deliver,
    encode_basic_get_ok,
    encode_basic_nack,
    encode_basic_return,
)
from tests.unit.protocol.reference import as_signed, build, header_payload, pamqp_frame, payload_of

MAX_TAG = (1 << 64) - 1


def test_decode_basic_publish() -> None:
    payload = payload_of(
        pamqp_frame(commands.Basic.Publish(exchange="amq.topic", routing_key="a.b", mandatory=True))
    )
    assert decode_basic_publish(payload) == ("amq.topic", "a.b", True, False)


def test_decode_basic_publish_immediate_and_unicode() -> None:
    publish = build(
        commands.Basic.Publish, ticket=0, exchange="ëx", routing_key="ключ", mandatory=False, immediate=True
    )
    assert decode_basic_publish(payload_of(pamqp_frame(publish))) == ("ëx", "ключ", False, True)


@pytest.mark.parametrize(
    "payload",
    [
        b"\x00\x3c\x00\x28\x00\x00",  # no fields
        b"\x00\x3c\x00\x28\x00\x00\x05ab",  # truncated exchange
        b"\x00\x3c\x00\x28\x00\x00\x00\x00",  # no bits octet
        b"\x00\x3c\x00\x28\x00\x00\x00\x00\x00\x00",  # trailing byte
    ],
)
def test_malformed_basic_publish_is_cannot_decode(payload: bytes) -> None:
    with pytest.raises(HardError) as raised:
        decode_basic_publish(payload)
    assert (raised.value.code, raised.value.class_id, raised.value.method_id) == (
        ReplyCode.FRAME_ERROR,
        60,
        40,
    )
    assert raised.value.text.startswith("cannot decode <<")


def test_invalid_utf8_routing_key_is_a_frame_error() -> None:
    with pytest.raises(HardError, match="Malformed UTF-8 in shortstr"):
        decode_basic_publish(b"\x00\x3c\x00\x28\x00\x00\x00\x01\xff\x00")


def test_decode_ack_nack_reject_take_unsigned_64_bit_tags() -> None:
    ack = payload_of(pamqp_frame(commands.Basic.Ack(as_signed(MAX_TAG), multiple=True)))
    nack = payload_of(pamqp_frame(commands.Basic.Nack(7, multiple=False, requeue=True)))
    reject = payload_of(pamqp_frame(commands.Basic.Reject(as_signed(1 << 63), requeue=False)))
    assert decode_basic_ack(ack) == (MAX_TAG, True)
    assert decode_basic_nack(nack) == (7, False, True)
    assert decode_basic_reject(reject) == (1 << 63, False)


@pytest.mark.parametrize("decoder", [decode_basic_ack, decode_basic_nack, decode_basic_reject])
def test_ack_family_with_wrong_length_is_cannot_decode(decoder: object) -> None:
    with pytest.raises(HardError) as raised:
        decoder(b"\x00\x3c\x00\x50" + bytes(8))  # type: ignore[operator]
    assert raised.value.code is ReplyCode.FRAME_ERROR


def test_encoders_equal_pamqp() -> None:
    assert encode_basic_deliver(3, "ctag", MAX_TAG, True, "ex", "rk") == pamqp_frame(
        commands.Basic.Deliver("ctag", as_signed(MAX_TAG), True, "ex", "rk"), 3
    )
    assert encode_basic_get_ok(3, 9, False, "", "q", 12) == pamqp_frame(
        commands.Basic.GetOk(9, False, "", "q", 12), 3
    )
    assert encode_basic_ack(1, 5, True) == pamqp_frame(commands.Basic.Ack(5, True), 1)
    assert encode_basic_nack(1, 5, False) == pamqp_frame(commands.Basic.Nack(5, False, False), 1)
    assert encode_basic_nack(1, 5, True, requeue=True) == pamqp_frame(commands.Basic.Nack(5, True, True), 1)
    assert encode_basic_return(2, 312, "NO_ROUTE", "amq.direct", "nowhere") == pamqp_frame(
        commands.Basic.Return(312, "NO_ROUTE", "amq.direct", "nowhere"), 2
    )


def test_encoders_refuse_short_strings_over_255_bytes() -> None:
    with pytest.raises(ValueError, match="255"):
        encode_basic_deliver(1, "c" * 256, 1, False, "", "")
    with pytest.raises(ValueError, match="255"):
        encode_basic_return(1, 312, "NO_ROUTE", "", "é" * 128)


def test_parse_content_header_reads_the_broker_fields() -> None:
    properties = commands.Basic.Properties(
        content_type="text/plain",
        headers={"x-match": "all", "n": 5},
        delivery_mode=2,
        priority=9,
        reply_to="amq.rabbitmq.reply-to",
        expiration="60000",
        user_id="guest",
        app_id="app",
    )
    info = parse_content_header(header_payload(123, properties))
    assert info == HeaderInfo(
        123, 2, 9, "60000", "amq.rabbitmq.reply-to", "guest", {"x-match": "all", "n": 5}
    )


def test_parse_content_header_without_properties() -> None:
    assert parse_content_header(header_payload(0, commands.Basic.Properties())) == HeaderInfo(0)


def test_parse_content_header_reads_64_bit_body_sizes() -> None:
    info = parse_content_header(b"\x00\x3c\x00\x00" + b"\xff" * 8 + b"\x00\x00")
    assert info.body_size == (1 << 64) - 1


def test_parse_content_header_follows_the_continuation_bit_like_pamqp() -> None:
    payload = b"\x00\x3c\x00\x00" + bytes(8) + b"\x10\x01" + b"\x00\x00" + b"\x02"
    assert parse_content_header(payload).delivery_mode == 2


def test_wrong_class_in_content_header_is_rabbitmqs_505() -> None:
    with pytest.raises(HardError) as raised:
        parse_content_header(b"\x00\x32\x00\x00" + bytes(8) + b"\x00\x00")
    assert (
        raised.value.reply_text
        == "UNEXPECTED_FRAME - expected content header for class 60, got one for class 50 instead"
    )


def test_nonzero_weight_is_rabbitmqs_505() -> None:
    with pytest.raises(HardError) as raised:
        parse_content_header(b"\x00\x3c\x00\x01" + bytes(8) + b"\x00\x00")
    assert raised.value.text == "expected content header for class 60, got non content header frame instead"


@pytest.mark.parametrize(
    "properties",
    [
        b"",  # no flags word
        b"\x80\x00",  # content-type flagged, missing
        b"\x80\x00\x05ab",  # content-type truncated
        b"\x10\x00\x02\x00",  # trailing byte
        b"\x20\x00\x00\x00\x00\x09\x01kS",  # headers table longer than the payload
        b"\x20\x00\x00\x00\x00\x03\x01k?",  # unknown field type in the table
        b"\x00\x40\x00\x00",  # timestamp truncated
    ],
)
def test_malformed_property_lists_are_frame_errors(properties: bytes) -> None:
    with pytest.raises(HardError) as raised:
        parse_content_header(b"\x00\x3c\x00\x00" + bytes(8) + properties)
    assert raised.value.code is ReplyCode.FRAME_ERROR


def test_memoised_header_infos_are_immutable_and_never_share_headers() -> None:
    payload = header_payload(5, commands.Basic.Properties(delivery_mode=2))
    assert parse_content_header(payload) is parse_content_header(bytes(payload))
    with_headers = header_payload(5, commands.Basic.Properties(headers={"a": 1}))
    first, second = parse_content_header(with_headers), parse_content_header(with_headers)
    assert first == second
    assert first.headers is not second.headers


def test_equal_header_payloads_without_a_table_are_kept_as_one_object() -> None:
    # A backlog of a publisher's messages holds one header object, not one per message.
    payload = header_payload(7, commands.Basic.Properties(delivery_mode=1, priority=3))
    copy = bytes(bytearray(payload))
    assert copy is not payload
    first_info, first = read_content_header(payload)
    info, kept = read_content_header(copy)
    assert kept is first
    assert info is first_info
    with_headers = header_payload(7, commands.Basic.Properties(headers={"a": 1}))
    _, kept_with_table = read_content_header(bytes(bytearray(with_headers)))
    assert read_content_header(with_headers)[1] is with_headers  # never shared: its headers dict is fresh
    assert kept_with_table == with_headers
