"""The bytes RabbitMQ 3.10.8 writes for a stream entry: each case below was published with pika (one message,
one confirm) into a stream of the oracle, and its entry's length read from the node's segment file (the
AMQP 1.0 encoding rabbit_msg_record gives the message, without osiris's 4-byte entry header)."""

from __future__ import annotations

import datetime

import pika
import pytest
from pika import frame

from broker.core.model.message import Message
from broker.core.streams.stream_file_bytes import (
    CHUNK_HEADER_BYTES,
    ENTRY_HEADER_BYTES,
    TRAILER_BYTES,
    EntrySizer,
    body_section_bytes,
    header_bytes,
)

ALL_PROPERTIES = pika.BasicProperties(
    content_type="text/plain",
    content_encoding="gzip",
    message_id="m-1",
    correlation_id="c-1",
    reply_to="rq",
    user_id="guest",
    timestamp=1700000000,
    type="t1",
    app_id="app",
)
HEADERS = {
    "a": "x",
    "n": 5,
    "big": 100000,
    "huge": 2**40,
    "neg": -3,
    "b": True,
    "l": [1, 2],  # arrays and tables are left out of the AMQP 1.0 application-properties
    "t": {"k": 1},
    "by": b"\x00\x01",
    "dt": datetime.datetime(2020, 1, 1),
    "v": None,
}

# (queue and routing key, properties, measured entry bytes for a 5-byte body, for a 300-byte body)
ORACLE = [
    ("e_plain", pika.BasicProperties(), 54, 352),
    ("e_dm2", pika.BasicProperties(delivery_mode=2), 77, 375),
    ("e_dm1prio", pika.BasicProperties(delivery_mode=1, priority=5, expiration="60000"), 128, 426),
    ("e_props", ALL_PROPERTIES, 159, 457),
    ("e_hdrs", pika.BasicProperties(headers=HEADERS), 132, 430),
    ("e_cid_only", pika.BasicProperties(correlation_id="c-1"), 80, 378),
    ("e_ts_only", pika.BasicProperties(timestamp=5), 83, 381),
    ("e_longhdr", pika.BasicProperties(headers={"s": "y" * 300}), 376, 674),
]


def _header(properties: pika.BasicProperties, body_size: int) -> bytes:
    marshalled: bytes = frame.Header(1, body_size, properties).marshal()
    return marshalled[7:-1]  # the frame's payload


@pytest.mark.parametrize(("queue", "properties", "small", "large"), ORACLE, ids=[case[0] for case in ORACLE])
def test_an_entry_is_as_long_as_rabbitmq_encodes_it(
    queue: str, properties: pika.BasicProperties, small: int, large: int
) -> None:
    for body_size, measured in ((5, small), (300, large)):
        assert (
            header_bytes("", queue, _header(properties, body_size)) + body_section_bytes(body_size)
            == measured
        )


def test_a_chunk_adds_osiris_headers_and_the_writer_trailer_unless_it_follows_a_snapshot() -> None:
    # Measured: a 1000-byte message is a 1047-byte entry; its chunk is 48 + 4 + 1047 and a 43-byte trailer.
    message = Message("", "s1", _header(pika.BasicProperties(), 1000), b"x" * 1000)
    sizer = EntrySizer()
    assert sizer.chunk_bytes(message, after_snapshot=False) == 48 + 4 + 1047 + 43
    assert sizer.chunk_bytes(message, after_snapshot=True) == CHUNK_HEADER_BYTES + ENTRY_HEADER_BYTES + 1047
    assert TRAILER_BYTES == 43
