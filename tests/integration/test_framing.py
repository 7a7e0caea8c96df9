"""Malformed frames: each is a hard error (501 FRAME_ERROR / 505 UNEXPECTED_FRAME) closing that connection.

RabbitMQ's texts for these embed Erlang terms, e.g. (3.10.8):
  "FRAME_ERROR - type 1, all octets = <<0,60,0,10,0,0,0,0,0,1,0>>: {invalid_frame_end_marker,0}"
  "FRAME_ERROR - type 9, all octets = <<\"abc\">>: unknown_frame"
  "FRAME_ERROR - type 3, all octets = <<>>: {frame_too_large,140000,131064}"
  "FRAME_ERROR - cannot decode <<0>>"                      (class 50, method 10)
  "UNEXPECTED_FRAME - type 8, all octets = <<>>"           (heartbeat on a channel other than 0)
No client matches on those, so only the code and the reply-text prefix are checked here.
"""

from __future__ import annotations

import struct

from pamqp import commands, frame, header

from .conftest import RawFactory
from .raw_amqp import RawAMQP

FRAME_END = b"\xce"


def assert_closed_with(client: RawAMQP, code: int, prefix: str) -> commands.Connection.Close:
    """The broker closes the connection with ``code`` and a reply text starting with ``prefix``."""
    close = client.expect_connection_close()
    assert close.reply_code == code
    assert close.reply_text.startswith(prefix)
    return close


def test_bad_frame_end_octet_is_501(raw: RawFactory) -> None:
    client = raw().opened()
    data = frame.marshal(commands.Basic.Qos(prefetch_count=1), 1)
    client.send_bytes(data[:-1] + b"\x00")
    assert_closed_with(client, 501, "FRAME_ERROR - ")


def test_unknown_frame_type_is_501(raw: RawFactory) -> None:
    client = raw().opened()
    client.send_bytes(struct.pack(">BHI", 9, 1, 3) + b"abc" + FRAME_END)
    assert_closed_with(client, 501, "FRAME_ERROR - ")


def test_frame_above_frame_max_is_501(raw: RawFactory) -> None:
    client = raw().opened()
    assert client.tune is not None
    size = client.tune.frame_max + 10_000  # far beyond the 8-byte tolerance RabbitMQ allows
    client.send(commands.Basic.Publish(exchange="", routing_key="nowhere"), 1)
    client.send(header.ContentHeader(0, size, commands.Basic.Properties()), 1)
    client.send_bytes(struct.pack(">BHI", 3, 1, size) + b"x" * size + FRAME_END)
    assert_closed_with(client, 501, "FRAME_ERROR - ")


def test_body_frame_of_exactly_frame_max_is_accepted(raw: RawFactory) -> None:
    client = raw().opened()
    assert client.tune is not None
    payload_max = client.tune.frame_max - 8  # 7 bytes of frame header + 1 frame-end octet
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    queue = client.expect(commands.Queue.DeclareOk).queue
    client.send(commands.Confirm.Select(), 1)
    client.expect(commands.Confirm.SelectOk)
    client.send(commands.Basic.Publish(exchange="", routing_key=queue), 1)
    client.send(header.ContentHeader(0, payload_max, commands.Basic.Properties()), 1)
    client.send_bytes(struct.pack(">BHI", 3, 1, payload_max) + b"y" * payload_max + FRAME_END)
    assert client.expect(commands.Basic.Ack, channel=1).delivery_tag == 1
    client.send(commands.Queue.Declare(queue=queue, passive=True), 1)
    assert client.expect(commands.Queue.DeclareOk).message_count == 1


def test_heartbeat_on_a_channel_is_505(raw: RawFactory) -> None:
    client = raw().opened()
    client.send_bytes(struct.pack(">BHI", 8, 1, 0) + FRAME_END)
    assert_closed_with(client, 505, "UNEXPECTED_FRAME - ")


def test_heartbeat_on_channel_zero_is_fine(raw: RawFactory) -> None:
    client = raw().opened()
    client.send_bytes(struct.pack(">BHI", 8, 0, 0) + FRAME_END)
    client.send(commands.Basic.Qos(prefetch_count=3), 1)
    client.expect(commands.Basic.QosOk, channel=1)


def test_truncated_method_arguments_are_501(raw: RawFactory) -> None:
    client = raw().opened()
    client.send_bytes(struct.pack(">BHI", 1, 1, 5) + struct.pack(">HH", 50, 10) + b"\x00" + FRAME_END)
    close = assert_closed_with(client, 501, "FRAME_ERROR - ")
    assert (close.class_id, close.method_id) == (50, 10)


def test_frames_split_across_many_writes_are_reassembled(raw: RawFactory) -> None:
    client = raw().opened()
    data = frame.marshal(commands.Queue.Declare(queue="", exclusive=True), 1)
    data += frame.marshal(commands.Basic.Qos(prefetch_count=7), 1)
    for i in range(len(data)):
        client.send_bytes(data[i : i + 1])
    assert client.expect(commands.Queue.DeclareOk, channel=1).queue.startswith("amq.gen-")
    client.expect(commands.Basic.QosOk, channel=1)


def test_many_frames_in_one_write_are_all_processed(raw: RawFactory) -> None:
    client = raw().opened()
    data = b"".join(frame.marshal(commands.Basic.Qos(prefetch_count=i), 1) for i in range(50))
    client.send_bytes(data)
    for _ in range(50):
        client.expect(commands.Basic.QosOk, channel=1)
