"""Byte-level content-header rewriting: untouched entries keep their bytes, new ones get RabbitMQ's types."""

from __future__ import annotations

import datetime
import struct
from typing import Any

from pamqp import commands, frame, header

from protocol.header_rewrite import (
    encode_value,
    replace_reply_to,
    rewrite_content_header,
    split_table,
)


def _payload(**props: Any) -> bytes:
    raw = frame.marshal(header.ContentHeader(0, 3, commands.Basic.Properties(**props)), 1)
    return raw[7:-1]


def _decode(payload: bytes) -> commands.Basic.Properties:
    content = header.ContentHeader()
    content.unmarshal(payload)
    return content.properties


def test_rabbitmq_types_for_broker_written_values() -> None:
    assert encode_value(1)[:1] == b"l"
    assert encode_value("x")[:1] == b"S"
    stamp = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    assert encode_value(stamp) == b"T" + struct.pack(">Q", int(stamp.timestamp()))
    assert encode_value([{"count": 1}])[:1] == b"A"


def test_set_headers_sorts_keeps_untouched_bytes_and_clears_expiration() -> None:
    payload = _payload(headers={"z": 1, "a": "x"}, expiration="100", message_id="m")
    original = dict(split_table(payload[18 : 18 + int.from_bytes(payload[14:18], "big")]))
    rewritten = rewrite_content_header(payload, {"m": 5}, (), True)
    props = _decode(rewritten)
    assert props.expiration is None
    assert props.message_id == "m"
    assert list(props.headers or {}) == ["a", "m", "z"]
    table = dict(split_table(rewritten[18 : 18 + int.from_bytes(rewritten[14:18], "big")]))
    assert table[b"z"] == original[b"z"]
    assert table[b"m"] == b"\x01ml" + struct.pack(">q", 5)


def test_headers_are_added_when_there_were_none_and_removed_keys_vanish() -> None:
    added = _decode(rewrite_content_header(_payload(), {"x-delivery-count": 0}, (), False))
    assert added.headers == {"x-delivery-count": 0}
    removed = _decode(rewrite_content_header(_payload(headers={"BCC": ["q"], "k": "v"}), {}, ("BCC",), False))
    assert removed.headers == {"k": "v"}


def test_replace_reply_to_sets_or_overwrites_the_property() -> None:
    assert _decode(replace_reply_to(_payload(app_id="a"), "amq.rabbitmq.reply-to.K")).reply_to == (
        "amq.rabbitmq.reply-to.K"
    )
    props = _decode(replace_reply_to(_payload(reply_to="old", correlation_id="c", message_type="t"), "new"))
    assert (props.reply_to, props.correlation_id, props.message_type) == ("new", "c", "t")
