"""Every fastpath codec equals pamqp byte for byte on random values (unicode names, tags up to 2**64-1)."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pamqp import commands

from protocol.codec import encode_delivery
from protocol.content_header import parse_content_header
from protocol.fastpath import (
    decode_basic_ack,
    decode_basic_nack,
    decode_basic_publish,
    decode_basic_reject,
    encode_basic_ack,
    encode_basic_deliver,
    encode_basic_deliver_content,
    encode_basic_get_ok,
    encode_basic_nack,
    encode_basic_return,
)
from tests.unit.protocol.reference import (
    as_signed,
    build,
    header_payload,
    pamqp_decode_method,
    pamqp_frame,
    pamqp_properties,
    payload_of,
)
from tests.unit.protocol.strategies import channels, field_tables, longs, octets, short_strings, shorts, tags

UNSIGNED = 1 << 64
SETTINGS = settings(max_examples=150, deadline=None)


@SETTINGS
@given(shorts, short_strings, short_strings, st.booleans(), st.booleans())
def test_decode_basic_publish_equals_pamqp(
    ticket: int, exchange: str, routing_key: str, mandatory: bool, immediate: bool
) -> None:
    publish = build(
        commands.Basic.Publish,
        ticket=ticket,
        exchange=exchange,
        routing_key=routing_key,
        mandatory=mandatory,
        immediate=immediate,
    )
    payload = payload_of(pamqp_frame(publish))
    reference = pamqp_decode_method(payload)
    assert isinstance(reference, commands.Basic.Publish)
    expected = (reference.exchange, reference.routing_key, reference.mandatory, reference.immediate)
    assert decode_basic_publish(payload) == expected == (exchange, routing_key, mandatory, immediate)


@SETTINGS
@given(tags, st.booleans(), st.booleans())
def test_decode_ack_nack_reject_equal_pamqp(tag: int, first: bool, second: bool) -> None:
    ack = payload_of(pamqp_frame(commands.Basic.Ack(as_signed(tag), first)))
    nack = payload_of(pamqp_frame(commands.Basic.Nack(as_signed(tag), first, second)))
    reject = payload_of(pamqp_frame(commands.Basic.Reject(as_signed(tag), second)))
    reference = pamqp_decode_method(nack)
    assert isinstance(reference, commands.Basic.Nack)
    # pamqp reads longlong signed; RabbitMQ (and we) read it unsigned: the same 64 bits.
    assert reference.delivery_tag % UNSIGNED == tag
    assert decode_basic_ack(ack) == (tag, first)
    assert decode_basic_nack(nack) == (tag, first, second) == (tag, reference.multiple, reference.requeue)
    assert decode_basic_reject(reject) == (tag, second)


@SETTINGS
@given(channels, short_strings, tags, st.booleans(), short_strings, short_strings)
def test_encode_basic_deliver_equals_pamqp(
    channel: int, consumer_tag: str, tag: int, redelivered: bool, exchange: str, routing_key: str
) -> None:
    reference = build(
        commands.Basic.Deliver,
        consumer_tag=consumer_tag,
        delivery_tag=as_signed(tag),
        redelivered=redelivered,
        exchange=exchange,
        routing_key=routing_key,
    )
    ours = encode_basic_deliver(channel, consumer_tag, tag, redelivered, exchange, routing_key)
    assert ours == pamqp_frame(reference, channel)


@SETTINGS
@given(
    channels,
    short_strings,
    tags,
    st.booleans(),
    short_strings,
    short_strings,
    st.binary(max_size=64),
    st.binary(max_size=300),
    st.sampled_from([0, 9, 10, 64, 4096, 131072]),
)
def test_encode_basic_deliver_content_equals_deliver_then_content(
    channel: int,
    consumer_tag: str,
    tag: int,
    redelivered: bool,
    exchange: str,
    routing_key: str,
    header: bytes,
    body: bytes,
    frame_max: int,
) -> None:
    """The one-join delivery equals basic.deliver + content frames for empty, one-frame and split bodies."""
    method = encode_basic_deliver(channel, consumer_tag, tag, redelivered, exchange, routing_key)
    expected = encode_delivery(method, channel, header, body, frame_max)
    ours = encode_basic_deliver_content(
        channel, consumer_tag, tag, redelivered, exchange, routing_key, header, body, frame_max
    )
    assert ours == expected


@SETTINGS
@given(channels, tags, st.booleans(), short_strings, short_strings, longs)
def test_encode_basic_get_ok_equals_pamqp(
    channel: int, tag: int, redelivered: bool, exchange: str, routing_key: str, count: int
) -> None:
    reference = build(
        commands.Basic.GetOk,
        delivery_tag=as_signed(tag),
        redelivered=redelivered,
        exchange=exchange,
        routing_key=routing_key,
        message_count=count,
    )
    assert encode_basic_get_ok(channel, tag, redelivered, exchange, routing_key, count) == pamqp_frame(
        reference, channel
    )


@SETTINGS
@given(channels, tags, st.booleans(), st.booleans())
def test_encode_basic_ack_and_nack_equal_pamqp(channel: int, tag: int, multiple: bool, requeue: bool) -> None:
    assert encode_basic_ack(channel, tag, multiple) == pamqp_frame(
        commands.Basic.Ack(as_signed(tag), multiple), channel
    )
    assert encode_basic_nack(channel, tag, multiple, requeue) == pamqp_frame(
        commands.Basic.Nack(as_signed(tag), multiple, requeue), channel
    )


@SETTINGS
@given(channels, shorts, short_strings, short_strings, short_strings)
def test_encode_basic_return_equals_pamqp(
    channel: int, code: int, text: str, exchange: str, routing_key: str
) -> None:
    reference = build(
        commands.Basic.Return, reply_code=code, reply_text=text, exchange=exchange, routing_key=routing_key
    )
    assert encode_basic_return(channel, code, text, exchange, routing_key) == pamqp_frame(reference, channel)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


timestamps = st.datetimes(
    min_value=datetime.datetime(1970, 1, 2),
    max_value=datetime.datetime(2100, 1, 1),
    timezones=st.just(datetime.UTC),
)


@st.composite
def basic_properties(draw: st.DrawFn) -> commands.Basic.Properties:
    """Every Basic property, cluster-id included (pamqp's __init__ would refuse it; marshal does not)."""
    properties = commands.Basic.Properties.__new__(commands.Basic.Properties)
    for name in properties.__slots__:
        kind = commands.Basic.Properties.amqp_type(name)
        strategy: st.SearchStrategy[Any] = {
            "shortstr": short_strings,
            "octet": octets,
            "table": field_tables,
            "timestamp": timestamps,
        }[kind]
        setattr(properties, name, draw(optional(strategy)))
    return properties


@settings(max_examples=200, deadline=None)
@given(st.integers(0, (1 << 64) - 1), basic_properties())
def test_parse_content_header_equals_pamqp(body_size: int, properties: commands.Basic.Properties) -> None:
    payload = header_payload(body_size, properties)
    reference = pamqp_properties(payload)
    expected = reference.properties
    info = parse_content_header(payload)
    assert info.body_size == reference.body_size == body_size
    assert info.delivery_mode == expected.delivery_mode
    assert info.priority == expected.priority
    assert info.expiration == expected.expiration
    assert info.reply_to == expected.reply_to
    assert info.user_id == expected.user_id
    assert info.headers == expected.headers
