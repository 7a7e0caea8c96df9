"""After connection.close the socket is the client's to end, as rabbit_reader keeps a closed connection
(broker/session/closing.py): close-ok, then nothing but another close-ok until the client's close-ok, the
client's end of the socket, or the closing timeout."""

from __future__ import annotations

import struct

import pytest
from pamqp import commands

from broker.session.closing import CLOSING_TIMEOUT_S, closing_timeout_s
from protocol.connection import ConnectionState
from tests.component.harness import Client

HEARTBEAT_FRAME = b"\x08\x00\x00\x00\x00\x00\x00\xce"


def _closed_by_client(heartbeat_s: int = 0) -> Client:
    client = Client()
    client.handshake()
    client.session.heartbeat.interval_s = heartbeat_s  # as negotiated at tune-ok
    client.open_channel(1)
    client.send(
        0, commands.Connection.Close(reply_code=320, reply_text="CONNECTION_FORCED", class_id=0, method_id=0)
    )
    assert [type(value) for _, value in client.received()] == [commands.Connection.CloseOk]
    return client


def test_close_ok_leaves_the_socket_open_for_the_closing_timeout() -> None:
    client = _closed_by_client()
    assert client.session.state is ConnectionState.CLOSED
    assert not client.transport.closed
    assert client.transport.close_after == CLOSING_TIMEOUT_S


@pytest.mark.parametrize(
    ("heartbeat_s", "timeout_s"), [(0, 30), (2, 2), (5, 5), (29, 29), (30, 30), (60, 30)]
)
def test_the_closing_timeout_is_the_heartbeat_when_shorter(heartbeat_s: int, timeout_s: int) -> None:
    # close_connection/1: RabbitMQ 3.10.8 reset the socket 30 s after close-ok at heartbeat 0, 2 s at 2, 5 s
    # at 5.
    assert closing_timeout_s(heartbeat_s) == timeout_s
    assert _closed_by_client(heartbeat_s).transport.close_after == timeout_s


def test_frames_after_close_ok_get_no_answer() -> None:
    client = _closed_by_client()
    client.send(1, commands.Basic.Qos(prefetch_count=1))
    client.send(2, commands.Channel.Open())
    client.feed(HEARTBEAT_FRAME)
    client.send(0, commands.Connection.Open(virtual_host="/"))
    client.send(0, commands.Connection.UpdateSecret(new_secret="s", reason="r"))
    assert client.received() == []
    assert not client.transport.closed


def test_another_close_gets_another_close_ok_and_the_socket_stays() -> None:
    client = _closed_by_client()
    client.send(0, commands.Connection.Close(reply_code=200, reply_text="again", class_id=0, method_id=0))
    assert [type(value) for _, value in client.received()] == [commands.Connection.CloseOk]
    assert not client.transport.closed


def test_the_clients_close_ok_ends_the_connection() -> None:
    client = _closed_by_client()
    client.send(0, commands.Connection.CloseOk())
    assert client.transport.closed
    assert client.received() == []


def test_a_frame_error_after_close_ok_ends_the_connection_three_seconds_later() -> None:
    # fatal_frame_error/5: logged, ?SILENT_CLOSE_DELAY, then the end; nothing after it is read (3.10.8 reset
    # the socket 3 s after a bad frame-end following its close-ok).
    client = _closed_by_client()
    client.feed(struct.pack("!BHI", 1, 1, 0) + b"\x00")
    assert client.transport.close_after == 3.0
    client.send(0, commands.Connection.Close(reply_code=200, reply_text="again", class_id=0, method_id=0))
    assert client.received() == []


def test_heartbeats_go_on_and_silence_ends_nothing_once_closed() -> None:
    client = _closed_by_client(heartbeat_s=10)
    for _ in range(8):  # four intervals without a frame from the client
        client.session.heartbeat_tick()
        assert bytes(client.transport.buffer) == HEARTBEAT_FRAME
        client.transport.buffer.clear()
    assert not client.transport.closed


def test_after_the_brokers_close_a_client_close_gets_close_ok_and_the_socket_stays() -> None:
    # The broker's connection.close puts rabbit_reader in the same state: 3.10.8 answered a client's
    # connection.close there with close-ok and kept the socket until its closing timeout.
    client = Client()
    client.handshake()
    client.send(1, commands.Queue.Declare(queue="q"))  # no channel.open: 504, the broker closes
    assert isinstance(client.received()[-1][1], commands.Connection.Close)
    client.send(0, commands.Connection.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0))
    assert [type(value) for _, value in client.received()] == [commands.Connection.CloseOk]
    assert not client.transport.closed
    client.send(0, commands.Connection.CloseOk())
    assert client.transport.closed
