"""Connection class: protocol header, SASL (PLAIN, AMQPLAIN), tuning, vhosts, server properties, close."""

from __future__ import annotations

import socket
import time
from typing import Any

import aio_pika
import amqp
import amqp.exceptions
import pika
import pika.exceptions
import pytest
from pamqp import commands

from tests.rabbitmq_expected import CAPABILITIES

from .conftest import ConnectFactory, RawFactory
from .helpers import new_queue
from .raw_amqp import SocketClosed

AUTH_REFUSED_PLAIN = (
    "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. "
    "For details see the broker logfile."
)
AUTH_REFUSED_AMQPLAIN = (
    "ACCESS_REFUSED - Login was refused using authentication mechanism AMQPLAIN. "
    "For details see the broker logfile."
)


def test_pika_connects_with_guest_over_plain(connect: ConnectFactory) -> None:
    connection = connect()
    assert connection.is_open
    ch = connection.channel()
    ok = ch.queue_declare("", exclusive=True)
    assert ok.method.queue.startswith("amq.gen-")
    connection.close()
    assert connection.is_closed


def test_py_amqp_connects_with_amqplain(amqp_params: dict[str, Any]) -> None:
    conn = amqp.Connection(
        host=f"{amqp_params['host']}:{amqp_params['port']}",
        userid=amqp_params["username"],
        password=amqp_params["password"],
        virtual_host=amqp_params["vhost"],
        login_method="AMQPLAIN",
        connect_timeout=5,
    )
    conn.connect()
    try:
        assert conn.connected
        ch = conn.channel()
        queue, message_count, consumer_count = ch.queue_declare("", exclusive=True)
        assert queue.startswith("amq.gen-")
        assert (message_count, consumer_count) == (0, 0)
    finally:
        conn.close()


def test_start_offers_plain_and_amqplain_with_locale_en_us(raw: RawFactory) -> None:
    client = raw()
    client.handshake()
    assert client.start is not None
    assert (client.start.version_major, client.start.version_minor) == (0, 9)
    assert set(client.start.mechanisms.split()) >= {"PLAIN", "AMQPLAIN"}
    assert "en_US" in client.start.locales.split()


def test_wrong_password_gets_access_refused_on_pika(connect: ConnectFactory) -> None:
    with pytest.raises(pika.exceptions.ProbableAuthenticationError) as excinfo:
        connect(credentials=pika.PlainCredentials("guest", "wrong"))
    assert str(excinfo.value) == f"ConnectionClosedByBroker: (403) {AUTH_REFUSED_PLAIN!r}"


def test_wrong_password_gets_exact_403_on_py_amqp(amqp_params: dict[str, Any]) -> None:
    conn = amqp.Connection(
        host=f"{amqp_params['host']}:{amqp_params['port']}",
        userid="guest",
        password="wrong",
        virtual_host=amqp_params["vhost"],
        login_method="AMQPLAIN",
        connect_timeout=5,
    )
    with pytest.raises(amqp.exceptions.AccessRefused) as excinfo:
        conn.connect()
    assert excinfo.value.reply_code == 403
    assert excinfo.value.reply_text == AUTH_REFUSED_AMQPLAIN


def test_unknown_user_is_refused_like_a_wrong_password(connect: ConnectFactory) -> None:
    with pytest.raises(pika.exceptions.ProbableAuthenticationError) as excinfo:
        connect(credentials=pika.PlainCredentials("nobody-here", "guest"))
    assert str(excinfo.value) == f"ConnectionClosedByBroker: (403) {AUTH_REFUSED_PLAIN!r}"


def test_wrong_password_on_raw_socket_gets_connection_close_403(raw: RawFactory) -> None:
    client = raw()
    client.send_header()
    client.start_ok("guest", "wrong", failure_close=True)
    close = client.expect(commands.Connection.Close, channel=0)
    assert (close.reply_code, close.reply_text) == (403, AUTH_REFUSED_PLAIN)
    assert (close.class_id, close.method_id) == (0, 0)


def test_wrong_password_without_failure_close_capability_just_drops_the_socket(raw: RawFactory) -> None:
    """Clients that do not advertise authentication_failure_close get the TCP connection closed, no frame."""
    client = raw()
    client.send_header()
    client.start_ok("guest", "wrong", failure_close=False)
    with pytest.raises(SocketClosed):
        client.recv()


def test_unknown_vhost_gets_530_not_allowed(connect: ConnectFactory) -> None:
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as excinfo:
        connect(virtual_host="nope")
    assert str(excinfo.value) == "ConnectionClosedByBroker: (530) 'NOT_ALLOWED - vhost nope not found'"


def test_unknown_vhost_close_frame_names_connection_open(raw: RawFactory) -> None:
    client = raw()
    client.send_header()
    client.start_ok()
    client.tune_ok()
    client.send(commands.Connection.Open(virtual_host="nope"))
    close = client.expect(commands.Connection.Close, channel=0)
    assert (close.reply_code, close.reply_text) == (530, "NOT_ALLOWED - vhost nope not found")
    assert (close.class_id, close.method_id) == (10, 40)


async def test_server_properties_capabilities_seen_by_aio_pika(amqp_url: str) -> None:
    connection = await aio_pika.connect(amqp_url, timeout=5)
    try:
        assert connection.transport is not None
        props = connection.transport.connection.server_properties
        assert props["capabilities"] == CAPABILITIES
        for key in ("product", "version", "platform", "copyright", "information"):
            assert isinstance(props[key], str)
            assert props[key]
    finally:
        await connection.close()


def test_server_properties_capabilities_seen_by_pika(connection: pika.BlockingConnection) -> None:
    assert connection._impl.server_properties["capabilities"] == CAPABILITIES


def test_tune_proposes_rabbitmq_defaults(raw: RawFactory) -> None:
    client = raw()
    client.handshake()
    assert client.tune is not None
    assert (client.tune.channel_max, client.tune.frame_max, client.tune.heartbeat) == (2047, 131072, 60)


def test_pika_negotiates_server_limits_by_default(connection: pika.BlockingConnection) -> None:
    params = connection._impl.params
    assert (params.frame_max, params.channel_max, params.heartbeat) == (131072, 2047, 60)


def test_pika_negotiates_the_smaller_client_values(connect: ConnectFactory) -> None:
    connection = connect(frame_max=8192, channel_max=16, heartbeat=10)
    params = connection._impl.params
    assert (params.frame_max, params.channel_max, params.heartbeat) == (8192, 16, 10)
    # The negotiated frame_max is honoured: a body far larger than one frame still round-trips.
    ch = connection.channel()
    queue = new_queue(ch)
    body = bytes(range(256)) * 200  # 51200 bytes -> 7 body frames of <= 8184 bytes
    ch.basic_publish("", queue, body)
    method, _props, got = ch.basic_get(queue, auto_ack=True)
    assert method is not None
    assert got == body


def test_heartbeat_zero_from_client_disables_heartbeats(connect: ConnectFactory) -> None:
    connection = connect(heartbeat=0)
    assert connection._impl.params.heartbeat == 0
    assert connection.channel().is_open


def test_channel_max_reached_is_530_not_allowed(raw: RawFactory) -> None:
    client = raw()
    client.handshake(channel_max=2)
    client.open_channel(1)
    client.open_channel(2)
    client.send(commands.Channel.Open(), 3)
    close = client.expect_connection_close()
    assert close.reply_code == 530
    assert close.reply_text == (
        "NOT_ALLOWED - number of channels opened (2) has reached the negotiated channel_max (2)"
    )


def test_client_close_gets_close_ok(raw: RawFactory) -> None:
    client = raw().opened()
    client.send(commands.Connection.Close(reply_code=200, reply_text="Goodbye", class_id=0, method_id=0))
    client.expect(commands.Connection.CloseOk, channel=0)


def test_after_close_ok_the_socket_stays_until_the_closing_timeout(raw: RawFactory) -> None:
    # rabbit_reader's close_connection/1 (broker/session/closing.py): after close-ok the socket is the
    # client's to end; the broker answers another close meanwhile and ends it itself only after the closing
    # timeout, the heartbeat when shorter than 30 s (RabbitMQ 3.10.8: 1 s at heartbeat 1).
    client = raw()
    client.handshake(heartbeat=1)
    client.send(commands.Connection.Close(reply_code=200, reply_text="Goodbye", class_id=0, method_id=0))
    client.expect(commands.Connection.CloseOk, channel=0)
    answered_at = time.monotonic()
    client.send(commands.Connection.Close(reply_code=200, reply_text="again", class_id=0, method_id=0))
    client.expect(commands.Connection.CloseOk, channel=0)
    client.expect_closed(timeout_s=5.0)
    assert time.monotonic() - answered_at >= 0.5


def test_the_clients_close_ok_after_close_ok_ends_the_connection(raw: RawFactory) -> None:
    client = raw().opened()  # heartbeat 0: the broker would wait 30 s
    client.send(commands.Connection.Close(reply_code=200, reply_text="Goodbye", class_id=0, method_id=0))
    client.expect(commands.Connection.CloseOk, channel=0)
    client.send(commands.Connection.CloseOk())
    client.expect_closed(timeout_s=5.0)


def test_pika_clean_close_releases_exclusive_queue(connect: ConnectFactory) -> None:
    owner = connect()
    queue = owner.channel().queue_declare("", exclusive=True).method.queue
    owner.close()
    assert owner.is_closed
    other = connect().channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        other.queue_declare(queue, passive=True)
    assert excinfo.value.args == (404, f"NOT_FOUND - no queue '{queue}' in vhost '/'")


def test_method_on_channel_zero_is_504(raw: RawFactory) -> None:
    client = raw()
    client.handshake()
    client.send(commands.Queue.Declare(queue="", exclusive=True), 0)
    close = client.expect_connection_close()
    assert (close.reply_code, close.reply_text) == (
        504,
        "CHANNEL_ERROR - unexpected method in connection state running",
    )


@pytest.mark.parametrize(
    "greeting",
    [
        pytest.param(b"HTTP/1.1 200 OK\r\n\r\n", id="http-response"),
        pytest.param(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", id="http-request"),
        pytest.param(b"AMQP\x00\x00\x09\x00", id="amqp-0-9-0"),
        pytest.param(b"AMQP\x00\x00\x08\x00", id="amqp-0-8-0-variant"),
        pytest.param(b"AMQP\x00\x00\x0a\x00", id="amqp-0-10"),
        pytest.param(b"XXXXXXXX", id="garbage"),
    ],
)
def test_bad_protocol_header_gets_supported_header_then_close(
    amqp_params: dict[str, Any], greeting: bytes
) -> None:
    with socket.create_connection((amqp_params["host"], amqp_params["port"]), timeout=5) as sock:
        sock.sendall(greeting)
        received = b""
        closed = False
        try:
            while len(received) < 64:
                chunk = sock.recv(64)
                if not chunk:
                    closed = True
                    break
                received += chunk
        except ConnectionResetError:
            closed = True
        assert received == b"AMQP\x00\x00\x09\x01"
        assert closed


def test_correct_protocol_header_gets_connection_start(raw: RawFactory) -> None:
    client = raw()
    start = client.send_header()
    assert start.server_properties["capabilities"] == CAPABILITIES


def test_connection_survives_after_raw_close_of_another(connect: ConnectFactory, raw: RawFactory) -> None:
    """A client vanishing mid-handshake does not disturb connections that are open."""
    bystander = connect()
    ch = bystander.channel()
    queue = new_queue(ch)
    client = raw()
    client.send_header()
    client.close()
    ch.basic_publish("", queue, b"still here")
    method, _props, body = ch.basic_get(queue, auto_ack=True)
    assert method is not None
    assert body == b"still here"
