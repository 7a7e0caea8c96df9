"""Protocol edges answered as RabbitMQ answers them , side by side with the oracle.

Frames in flight for a channel the broker is closing are dropped until close-ok; a channel.close crossing the
broker's is answered with close-ok; connection.update-secret; protocol headers other than 0-9-1; a method
before connection.open; the handshake timeout. Each scenario records what a raw client sees on both brokers.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

import pytest
from pamqp import commands
from pamqp.body import ContentBody
from pamqp.frame import marshal as _marshal
from pamqp.header import ContentHeader
from pamqp.heartbeat import Heartbeat

from tests.integration.raw_amqp import RawAMQP, SocketClosed

from .wire import frame, oracle_url, params_of, raw_client

__all__ = ["oracle_url"]  # the fixture, imported for pytest

pytestmark = pytest.mark.compat  # every scenario runs against RabbitMQ too

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"


def _seen(client: RawAMQP, limit: int = 6, quiet_s: float = 0.5) -> list[tuple[int, str, Any]]:
    """Every method the broker sends until it is quiet for ``quiet_s``: (channel, name, key fields)."""
    out: list[tuple[int, str, Any]] = []
    for _ in range(limit):
        try:
            channel, value = client.recv(quiet_s)
        except TimeoutError:
            break
        except SocketClosed:
            out.append((0, "socket closed", None))
            break
        if isinstance(value, Heartbeat):
            continue
        fields = getattr(value, "reply_code", None)
        out.append((channel, value.name, fields))
    return out


def _both(oracle: str, ours: str, scenario: Any) -> tuple[Any, Any]:
    results = []
    for url in (oracle, ours):
        client = raw_client(url)
        try:
            results.append(scenario(client))
        finally:
            client.close()
    return results[0], results[1]


# -- channel closing ---------------------------------------------------------------------------------------


def _in_flight_after_channel_error(client: RawAMQP) -> list[tuple[int, str, Any]]:
    client.opened()
    # One write: a failing passive declare (404 closes the channel), then a publish with its content, a
    # declare and a qos that were already on the wire when the broker sent channel.close.
    data = b"".join(
        (
            _marshal(commands.Queue.Declare(queue="hardening-no-such-queue", passive=True), 1),
            _marshal(commands.Basic.Publish(exchange="", routing_key="x"), 1),
            _marshal(ContentHeader(0, 3, commands.Basic.Properties()), 1),
            _marshal(ContentBody(b"abc"), 1),
            _marshal(commands.Queue.Declare(queue="", exclusive=True), 1),
            _marshal(commands.Basic.Qos(prefetch_count=1), 1),
        )
    )
    client.send_bytes(data)
    seen = _seen(client)
    client.send(commands.Channel.CloseOk(), 1)
    client.send(commands.Channel.Open(), 1)
    seen += _seen(client)
    return seen


def test_frames_for_a_closing_channel_are_dropped_until_close_ok(amqp_url: str, oracle_url: str) -> None:
    theirs, ours = _both(oracle_url, amqp_url, _in_flight_after_channel_error)
    assert ours == theirs
    assert ours == [(1, "Channel.Close", 404), (1, "Channel.OpenOk", None)]


def _crossing_close(client: RawAMQP, close_ok: bool) -> list[tuple[int, str, Any]]:
    client.opened()
    client.send(commands.Queue.Declare(queue="hardening-no-such-queue", passive=True), 1)
    seen = _seen(client)
    # The client closes the channel itself instead of answering close-ok (both closes cross on the wire).
    client.send(commands.Channel.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0), 1)
    seen += _seen(client)
    if close_ok:  # then answers the broker's close
        client.send(commands.Channel.CloseOk(), 1)
    client.send(commands.Channel.Open(), 1)
    seen += _seen(client)
    return seen


@pytest.mark.parametrize("close_ok", [True, False], ids=["then-close-ok", "no-close-ok"])
def test_a_crossing_channel_close_is_answered_with_close_ok(
    close_ok: bool, amqp_url: str, oracle_url: str
) -> None:
    # Both closes need their close-ok: the channel number is free once the client's close-ok arrives; a
    # channel.open before it is 504 "second 'channel.open' seen" on RabbitMQ (and here).
    theirs, ours = _both(oracle_url, amqp_url, lambda client: _crossing_close(client, close_ok))
    assert ours == theirs
    assert ours[:2] == [(1, "Channel.Close", 404), (1, "Channel.CloseOk", None)]
    assert ours[2] == ((1, "Channel.OpenOk", None) if close_ok else (0, "Connection.Close", 504))


# -- connection.update-secret ------------------------------------------------------------------------------


@pytest.mark.parametrize("secret", ["guest", "not-the-password"])
def test_update_secret_is_answered_as_rabbitmq(secret: str, amqp_url: str, oracle_url: str) -> None:
    # The internal backend's update_state/2 keeps the user: update-secret-ok whatever the secret, and the
    # connection carries on.
    def scenario(client: RawAMQP) -> list[tuple[int, str, Any]]:
        client.opened()
        client.send(commands.Connection.UpdateSecret(new_secret=secret, reason="token refresh"))
        seen = _seen(client)
        client.send(commands.Channel.Open(), 2)
        return seen + _seen(client)

    theirs, ours = _both(oracle_url, amqp_url, scenario)
    assert ours == theirs
    assert ours == [(0, "Connection.UpdateSecretOk", None), (2, "Channel.OpenOk", None)]


def test_update_secret_before_open_is_504_as_rabbitmq(amqp_url: str, oracle_url: str) -> None:
    def scenario(client: RawAMQP) -> tuple[Any, ...]:
        client.send_header()
        client.start_ok()
        client.tune_ok()
        client.send(commands.Connection.UpdateSecret(new_secret="guest", reason="early"))
        close = client.expect_connection_close()
        return close.reply_code, close.reply_text, close.class_id, close.method_id

    theirs, ours = _both(oracle_url, amqp_url, scenario)
    assert ours == theirs
    assert ours == (504, "CHANNEL_ERROR - unexpected method in connection state opening", 10, 70)


# -- protocol headers and pre-auth errors ------------------------------------------------------------------


def _answer_to_header(url: str, header: bytes) -> bytes:
    """What the broker writes before closing the socket (a 0-9-1 start frame is cut to its ids)."""
    with socket.create_connection(params_of(url), timeout=5) as sock:
        sock.sendall(header)
        data = b""
        try:
            while chunk := sock.recv(4096):
                data += chunk
                if data[:1] == b"\x01" and len(data) >= 13:
                    return data[:13]  # frame header + class/method ids + version octets
        except (ConnectionResetError, TimeoutError):
            pass
        return data


@pytest.mark.parametrize(
    "header",
    [
        b"AMQP\x01\x01\x00\x09",  # 0-9: spoken as 0-9-1 (rabbit_reader version_negotiation/2)
        b"AMQP\x00\x01\x00\x00",  # AMQP 1.0 (no plugin)
        b"AMQP\x03\x01\x00\x00",  # AMQP 1.0 SASL layer
        b"AMQP\x00\x00\x09\x02",
        b"AMQP\x00\x00\x08\x00",
        b"HELLO123",
        b"GET / HTTP/1.1\r\n\r\n",
    ],
    ids=["0-9", "1.0", "1.0-sasl", "0-9-2", "0-0-8-0", "garbage", "http"],
)
def test_protocol_headers_are_answered_as_rabbitmq(header: bytes, amqp_url: str, oracle_url: str) -> None:
    theirs = _answer_to_header(oracle_url, header)
    ours = _answer_to_header(amqp_url, header)
    if theirs.startswith(b"\x01"):  # connection.start: compare ids and version, not the frame size
        assert ours[:3] == theirs[:3]
        assert ours[7:] == theirs[7:]
    else:
        assert ours == theirs == PROTOCOL_HEADER


def test_a_channel_frame_before_open_is_505_as_rabbitmq(amqp_url: str, oracle_url: str) -> None:
    def scenario(client: RawAMQP) -> tuple[Any, ...]:
        client.send_header()
        client.start_ok()
        client.tune_ok()
        client.send_bytes(frame(1, 1, struct.pack("!I", 0x0014000A) + b"\x00"))  # channel.open
        close = client.expect_connection_close()
        return close.reply_code, close.class_id, close.method_id

    theirs, ours = _both(oracle_url, amqp_url, scenario)
    assert ours == theirs


@pytest.mark.slow
def test_handshake_timeout_drops_a_silent_peer_as_rabbitmq(amqp_url: str, oracle_url: str) -> None:
    # handshake_timeout (10 s on both): a peer that sent the header and then nothing is disconnected. Both
    # sockets wait side by side; the bound only guards against a hang.
    clients = [raw_client(url) for url in (oracle_url, amqp_url)]
    try:
        for client in clients:
            client.send_header()
        started = time.monotonic()
        for client in clients:
            client.expect_closed(timeout_s=max(1.0, 30 - (time.monotonic() - started)))
    finally:
        for client in clients:
            client.close()


@pytest.mark.slow
def test_a_peer_that_misses_heartbeats_is_disconnected_as_rabbitmq(amqp_url: str, oracle_url: str) -> None:
    # heartbeat 1 s negotiated, then silence (the broker's own heartbeats are read and not answered): after
    # two missed intervals both brokers close the socket (rabbit_heartbeat; RabbitMQ logs "missed
    # heartbeats from client"). The bound only guards against a hang.
    clients = [raw_client(url) for url in (oracle_url, amqp_url)]
    try:
        for client in clients:
            client.handshake(heartbeat=1)
        started = time.monotonic()
        for client in clients:
            client.expect_closed(timeout_s=max(1.0, 15 - (time.monotonic() - started)))
    finally:
        for client in clients:
            client.close()
