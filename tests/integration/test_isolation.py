"""A connection that breaks the protocol is closed alone: other connections, their consumers and their queues
carry on, and new connections still open."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pika
import pytest
from pamqp import commands, frame, header
from pamqp.body import ContentBody

from .conftest import ConnectFactory, RawFactory
from .helpers import Collector, new_queue, pump
from .raw_amqp import RawAMQP, SocketClosed

FRAME_END = b"\xce"

Misbehaviour = Callable[[RawAMQP], None]


def flow_false(client: RawAMQP) -> None:
    client.opened()
    client.send(commands.Channel.Flow(active=False), 1)


def immediate(client: RawAMQP) -> None:
    client.opened()
    client.publish(1, "amq.direct", "x", b"x", immediate=True)


def prefetch_size(client: RawAMQP) -> None:
    client.opened()
    client.send(commands.Basic.Qos(prefetch_size=1), 1)


def recover_without_requeue(client: RawAMQP) -> None:
    client.opened()
    client.send(commands.Basic.Recover(requeue=False), 1)


def consumer_tag_reuse(client: RawAMQP) -> None:
    client.opened()
    client.send(commands.Queue.Declare(queue="", exclusive=True), 1)
    queue = client.expect(commands.Queue.DeclareOk).queue
    client.send(commands.Basic.Consume(queue=queue, consumer_tag="same"), 1)
    client.expect(commands.Basic.ConsumeOk)
    client.send(commands.Basic.Consume(queue=queue, consumer_tag="same"), 1)


def second_channel_open(client: RawAMQP) -> None:
    client.opened()
    client.send(commands.Channel.Open(), 1)


def unopened_channel(client: RawAMQP) -> None:
    client.handshake()
    client.send(commands.Basic.Qos(prefetch_count=1), 9)


def orphan_content_header(client: RawAMQP) -> None:
    client.opened()
    client.send(header.ContentHeader(0, 1, commands.Basic.Properties()), 1)


def orphan_body(client: RawAMQP) -> None:
    client.opened()
    client.send(ContentBody(b"x"), 1)


def bad_frame_end(client: RawAMQP) -> None:
    client.opened()
    client.send_bytes(frame.marshal(commands.Basic.Qos(prefetch_count=1), 1)[:-1] + b"\x00")


def oversized_frame(client: RawAMQP) -> None:
    client.opened()
    client.send_bytes(struct.pack(">BHI", 3, 1, 200_000) + b"z" * 200_000 + FRAME_END)


def channel_max_reached(client: RawAMQP) -> None:
    client.handshake(channel_max=1)
    client.open_channel(1)
    client.send(commands.Channel.Open(), 2)


HARD_ERRORS: list[tuple[str, Misbehaviour, int]] = [
    ("channel.flow-false", flow_false, 540),
    ("immediate", immediate, 540),
    ("prefetch-size", prefetch_size, 540),
    ("recover-requeue-false", recover_without_requeue, 540),
    ("consumer-tag-reuse", consumer_tag_reuse, 530),
    ("channel-max", channel_max_reached, 530),
    ("second-channel-open", second_channel_open, 504),
    ("unopened-channel", unopened_channel, 504),
    ("orphan-content-header", orphan_content_header, 505),
    ("orphan-body", orphan_body, 505),
    ("bad-frame-end", bad_frame_end, 501),
    ("oversized-frame", oversized_frame, 501),
]


@pytest.fixture
def bystander(connect: ConnectFactory) -> tuple[pika.BlockingConnection, str, Collector]:
    """A healthy connection with a consumer on its own queue."""
    connection = connect()
    ch = connection.channel()
    queue = new_queue(ch)
    seen = Collector(auto_ack_in_callback=True)
    ch.basic_consume(queue, seen)
    ch.basic_publish("", queue, b"before")
    pump(connection, lambda: len(seen) == 1, what="the bystander's first message")
    return connection, queue, seen


def assert_healthy(
    bystander: tuple[pika.BlockingConnection, str, Collector], connect: ConnectFactory, marker: bytes
) -> None:
    connection, queue, seen = bystander
    assert connection.is_open
    before = len(seen)
    connection.channel().basic_publish("", queue, marker)
    pump(connection, lambda: len(seen) == before + 1, what="the bystander's next message")
    assert seen.bodies[-1] == marker
    fresh = connect()  # new connections open, and can still reach the bystander's queue
    fresh.channel().basic_publish("", queue, marker + b"-fresh")
    fresh.close()
    pump(connection, lambda: len(seen) == before + 2, what="the message from a fresh connection")
    assert seen.bodies[-1] == marker + b"-fresh"


@pytest.mark.parametrize(("name", "misbehave", "code"), HARD_ERRORS, ids=[case[0] for case in HARD_ERRORS])
def test_hard_error_closes_only_the_offending_connection(
    raw: RawFactory,
    connect: ConnectFactory,
    bystander: tuple[pika.BlockingConnection, str, Collector],
    name: str,
    misbehave: Misbehaviour,
    code: int,
) -> None:
    client = raw()
    misbehave(client)
    close = client.expect_connection_close()
    assert close.reply_code == code, close.reply_text
    assert_healthy(bystander, connect, name.encode())


def test_failed_login_leaves_others_alone(
    raw: RawFactory, connect: ConnectFactory, bystander: tuple[pika.BlockingConnection, str, Collector]
) -> None:
    client = raw()
    client.send_header()
    client.start_ok("guest", "not-the-password")
    assert client.expect(commands.Connection.Close).reply_code == 403
    assert_healthy(bystander, connect, b"after-login-failure")


def test_bad_protocol_header_leaves_others_alone(
    raw: RawFactory, connect: ConnectFactory, bystander: tuple[pika.BlockingConnection, str, Collector]
) -> None:
    client = raw()
    client.send_bytes(b"GET / HTTP/1.1\r\n\r\n")
    assert client.sock.recv(8) == b"AMQP\x00\x00\x09\x01"
    assert_healthy(bystander, connect, b"after-http")


def test_client_vanishing_mid_frame_leaves_others_alone(
    raw: RawFactory, connect: ConnectFactory, bystander: tuple[pika.BlockingConnection, str, Collector]
) -> None:
    client = raw()
    client.opened()
    client.send(commands.Basic.Publish(exchange="", routing_key=bystander[1]), 1)
    client.send(header.ContentHeader(0, 1000, commands.Basic.Properties()), 1)
    client.send_bytes(struct.pack(">BHI", 3, 1, 1000) + b"partial")  # then hang up mid-body
    client.close()
    assert_healthy(bystander, connect, b"after-vanish")
    # The half-sent message was never delivered.
    assert b"partial" not in b"".join(bystander[2].bodies)


def test_vhost_error_leaves_others_alone(
    raw: RawFactory, connect: ConnectFactory, bystander: tuple[pika.BlockingConnection, str, Collector]
) -> None:
    client = raw()
    client.send_header()
    client.start_ok()
    client.tune_ok()
    client.send(commands.Connection.Open(virtual_host="no-such-vhost"))
    assert client.expect(commands.Connection.Close).reply_code == 530
    assert_healthy(bystander, connect, b"after-vhost")


def test_channel_errors_on_many_channels_leave_the_connection_open(
    raw: RawFactory, connect: ConnectFactory, bystander: tuple[pika.BlockingConnection, str, Collector]
) -> None:
    client = raw()
    client.handshake()
    for number in range(1, 6):
        client.open_channel(number)
        client.send(commands.Queue.Declare(queue="no-such-queue-for-isolation", passive=True), number)
        close = client.expect(commands.Channel.Close, channel=number)
        assert close.reply_code == 404
        client.send(commands.Channel.CloseOk(), number)
    client.open_channel(6)
    try:
        client.send(commands.Basic.Qos(prefetch_count=1), 6)
        client.expect(commands.Basic.QosOk, channel=6)
    except SocketClosed:  # pragma: no cover - would be a failure
        pytest.fail("the connection was closed after channel-level errors")
    assert_healthy(bystander, connect, b"after-channel-errors")
