"""Misbehaving clients get RabbitMQ's codes and texts, and the broker's other connections keep working."""

from __future__ import annotations

import struct

import pytest
from pamqp import commands, header
from pamqp.body import ContentBody

from broker.session.config import SessionConfig
from protocol.connection import ConnectionState
from tests.component.harness import Client, close_of


def test_method_before_channel_open_is_504_channel_error() -> None:
    client = Client()
    client.handshake()
    client.send(1, commands.Queue.Declare(queue="q"))
    channel, code, text = close_of(client.received())
    assert (channel, code) == (0, 504)
    assert text == "CHANNEL_ERROR - expected 'channel.open'"
    assert client.session.state is ConnectionState.CLOSING


def test_second_channel_open_is_504() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Channel.Open())
    assert close_of(client.received())[1:] == (504, "CHANNEL_ERROR - second 'channel.open' seen")


def test_content_header_without_publish_is_505() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, header.ContentHeader(0, 3, commands.Basic.Properties()))
    channel, code, _ = close_of(client.received())
    assert (channel, code) == (0, 505)


def test_method_while_content_is_expected_is_505() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Basic.Publish(exchange="", routing_key="q"))
    client.send(1, commands.Queue.Declare(queue="q"))
    assert close_of(client.received())[1] == 505


def test_heartbeat_on_a_channel_other_than_zero_is_505() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.feed(b"\x08\x00\x01\x00\x00\x00\x00\xce")
    assert close_of(client.received())[1] == 505


def test_frame_over_frame_max_is_501_before_its_payload_arrives() -> None:
    client = Client()
    client.handshake(frame_max=4096)
    client.open_channel(1)
    # Only the 7-byte frame header of a 1 MB body frame: the broker must refuse it without buffering.
    client.feed(struct.pack("!BHI", 3, 1, 1_000_000))
    channel, code, _ = close_of(client.received())
    assert (channel, code) == (0, 501)
    assert client.session.frames.buffered_bytes < 4096


def test_oversized_message_is_406_from_the_header_alone() -> None:
    client = Client(config=SessionConfig(max_message_size=1000))
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Basic.Publish(exchange="", routing_key="q"))
    client.send(1, header.ContentHeader(0, 5000, commands.Basic.Properties()))
    channel, code, text = close_of(client.received())
    assert (channel, code) == (1, 406)
    assert text == "PRECONDITION_FAILED - message size 5000 is larger than configured max size 1000"
    # The body frames already in flight are swallowed; the connection survives.
    client.send(1, ContentBody(b"x" * 4000))
    client.send(1, commands.Channel.CloseOk())
    client.open_channel(2)
    assert client.session.state is ConnectionState.OPEN


def test_channel_number_above_channel_max_opens_while_fewer_channels_are_open() -> None:
    # rabbit_reader counts open channels against channel_max, whatever number the client picks.
    client = Client(config=SessionConfig(channel_max=2))
    client.handshake()
    client.open_channel(65535)
    client.open_channel(3)
    assert client.session.state is ConnectionState.OPEN


def test_channel_open_past_channel_max_open_channels_is_530_with_the_count() -> None:
    client = Client(config=SessionConfig(channel_max=2))
    client.handshake()
    client.open_channel(7)
    client.open_channel(9)
    client.send(1, commands.Channel.Open())
    close = close_of(client.received())
    assert close == (
        0,
        530,
        "NOT_ALLOWED - number of channels opened (2) has reached the negotiated channel_max (2)",
    )


def test_tune_ok_channel_max_zero_is_refused_silently_when_the_server_has_a_limit() -> None:
    # rabbit_reader validate_negotiated_integer_value: 0 ("no limit") exceeds a server maximum.
    # fail_negotiation names 'connection.tune', so the error reaches handle_exception as a plain tuple: no
    # close frame, the socket dropped after ?SILENT_CLOSE_DELAY (3 s), as RabbitMQ 3.10 does
    # (tests/compat/frames).
    client = Client()
    client.feed(b"AMQP\x00\x00\x09\x01")
    client.send(
        0, commands.Connection.StartOk(client_properties={}, mechanism="PLAIN", response="\0guest\0guest")
    )
    client.received()
    client.send(0, commands.Connection.TuneOk(channel_max=0, frame_max=131072, heartbeat=0))
    assert client.received() == []
    assert client.session.state is ConnectionState.CLOSED
    assert client.transport.close_after == 3.0


@pytest.mark.parametrize(
    "payload",
    [
        b"\x00\x0a\x00\x0b\x00\x00\x00\x03\x01kZ",  # start-ok whose client-properties cannot be decoded
        b"\x00\x0a\x00\x0b\x00\x00\x00\x00\x05PLAIN\x00\x00\x01\xf4\x00guest",  # response longstr cut short
    ],
)
def test_undecodable_start_ok_is_dropped_without_a_reply(payload: bytes) -> None:
    # rabbit_reader in state starting: every error but a refused login ends in the silent clause.
    client = Client()
    client.feed(b"AMQP\x00\x00\x09\x01")
    client.received()
    client.feed(struct.pack("!BHI", 1, 0, len(payload)) + payload + b"\xce")
    assert client.received() == []
    assert client.transport.close_after == 3.0


def test_undecodable_connection_open_is_dropped_without_a_reply() -> None:
    # State opening: a frame error still gets its 501, but fields that cannot be decoded do not.
    client = Client()
    client.feed(b"AMQP\x00\x00\x09\x01")
    client.send(
        0, commands.Connection.StartOk(client_properties={}, mechanism="PLAIN", response="\0guest\0guest")
    )
    client.send(0, commands.Connection.TuneOk(channel_max=2047, frame_max=131072, heartbeat=0))
    client.received()
    client.feed(struct.pack("!BHI", 1, 0, 6) + b"\x00\x0a\x00\x28\x05/" + b"\xce")
    assert client.received() == []
    assert client.transport.close_after == 3.0


def test_frames_after_connection_close_are_ignored_until_close_ok() -> None:
    client = Client()
    client.handshake()
    client.send(1, commands.Queue.Declare(queue="q"))  # 504: the broker sends connection.close
    client.received()
    client.send(1, commands.Channel.Open())
    assert client.received() == []
    client.send(0, commands.Connection.CloseOk())
    assert client.transport.closed


def test_soft_error_closes_only_the_channel() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.open_channel(2)
    client.send(1, commands.Queue.Declare(queue="missing", passive=True))
    channel, code, text = close_of(client.received())
    assert (channel, code, text) == (1, 404, "NOT_FOUND - no queue 'missing' in vhost '/'")
    client.send(2, commands.Queue.Declare(queue="q2"))
    assert isinstance(client.received()[-1][1], commands.Queue.DeclareOk)


def test_frames_on_a_closing_channel_are_dropped_until_close_ok() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="missing", passive=True))
    client.received()
    client.send(1, commands.Queue.Declare(queue="other"))
    assert client.received() == []
    client.send(1, commands.Channel.CloseOk())
    client.open_channel(1)


def test_other_connections_are_unaffected_by_a_hard_error() -> None:
    first = Client()
    second = Client(broker=first.broker)
    first.handshake()
    second.handshake()
    second.open_channel(1)
    first.feed(b"\x01\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00")  # bad frame-end octet
    assert close_of(first.received())[1] == 501
    second.send(1, commands.Queue.Declare(queue="still-fine"))
    assert isinstance(second.received()[-1][1], commands.Queue.DeclareOk)


def test_wrong_protocol_header_gets_ours_back_and_a_close() -> None:
    client = Client()
    client.feed(b"HTTP/1.1 GET /\r\n")
    assert bytes(client.transport.buffer) == b"AMQP\x00\x00\x09\x01"
    assert client.transport.closed


def test_unknown_vhost_is_530() -> None:
    client = Client()
    client.feed(b"AMQP\x00\x00\x09\x01")
    client.send(
        0,
        commands.Connection.StartOk(client_properties={}, mechanism="PLAIN", response="\0guest\0guest"),
    )
    client.send(0, commands.Connection.TuneOk(channel_max=2047, frame_max=131072, heartbeat=0))
    client.send(0, commands.Connection.Open(virtual_host="nope"))
    assert close_of(client.received())[1:] == (530, "NOT_ALLOWED - vhost nope not found")


def test_tx_commit_without_select_is_406() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Tx.Commit())
    assert close_of(client.received()) == (1, 406, "PRECONDITION_FAILED - channel is not transactional")
