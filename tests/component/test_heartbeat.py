"""Heartbeats by timer ticks (every heartbeat/2) as rabbit_heartbeat times them: a heartbeat on every idle
tick (two per interval), the peer dropped at the second silent check of the receiver (once per interval)."""

from __future__ import annotations

from pamqp import commands

from tests.component.harness import Client


def _heartbeat_client() -> Client:
    client = Client()
    client.handshake()
    client.session.heartbeat.interval_s = 10
    return client


def test_a_heartbeat_is_sent_when_nothing_else_was_sent_for_a_tick() -> None:
    client = _heartbeat_client()
    client.session.heartbeat.sent = False
    client.session.heartbeat.received = True
    client.session.heartbeat_tick()
    assert bytes(client.transport.buffer) == b"\x08\x00\x00\x00\x00\x00\x00\xce"


def test_no_heartbeat_while_the_broker_is_sending_anyway() -> None:
    client = _heartbeat_client()
    client.session.heartbeat_tick()  # the first tick always sends one (rabbit_heartbeat's first interval)
    client.received()
    client.open_channel(1)  # the open-ok counts as traffic
    client.session.heartbeat_tick()
    assert client.received() == []


def test_an_idle_connection_gets_a_heartbeat_every_tick() -> None:
    # Two per negotiated interval, as RabbitMQ sends them (its own heartbeat is not traffic): every full
    # interval only was a client's read timeout of one interval away from dropping the connection.
    client = _heartbeat_client()
    for _ in range(4):
        client.session.heartbeat.received = True
        client.session.heartbeat_tick()
        assert bytes(client.transport.buffer) == b"\x08\x00\x00\x00\x00\x00\x00\xce"
        client.transport.buffer.clear()


def test_the_first_tick_sends_a_heartbeat_even_after_traffic() -> None:
    client = _heartbeat_client()
    client.open_channel(1)
    client.session.heartbeat_tick()
    assert bytes(client.transport.buffer) == b"\x08\x00\x00\x00\x00\x00\x00\xce"


def test_a_silent_peer_is_dropped_three_intervals_after_tune_ok() -> None:
    # The handshake is the last the peer sent: the receiver's first check (tick 2) sees it, the next two
    # (ticks 4 and 6) see nothing, and the second of those drops the peer, without a close frame. RabbitMQ
    # closed the socket 3.0 s after such a client's connection.open at heartbeat=2.
    client = _heartbeat_client()
    for _ in range(5):
        client.session.heartbeat_tick()
        assert not client.transport.closed
    client.received()
    client.session.heartbeat_tick()
    assert client.transport.closed
    assert client.received() == []


def test_peer_is_dropped_after_two_silent_heartbeat_intervals() -> None:
    client = _heartbeat_client()
    client.session.heartbeat.received = False
    for _ in range(3):
        client.session.heartbeat_tick()
        assert not client.transport.closed
    client.session.heartbeat_tick()  # fourth silent tick = 2 x heartbeat
    assert client.transport.closed


def test_any_frame_from_the_peer_resets_the_count() -> None:
    client = _heartbeat_client()
    for _ in range(3):
        client.session.heartbeat_tick()
    client.feed(b"\x08\x00\x00\x00\x00\x00\x00\xce")
    for _ in range(3):
        client.session.heartbeat_tick()
    assert not client.transport.closed


def test_negotiated_heartbeat_is_the_tune_ok_value() -> None:
    client = Client()
    client.feed(b"AMQP\x00\x00\x09\x01")
    client.send(
        0, commands.Connection.StartOk(client_properties={}, mechanism="PLAIN", response="\0guest\0guest")
    )
    client.send(0, commands.Connection.TuneOk(channel_max=2047, frame_max=131072, heartbeat=7))
    assert client.session.heartbeat.interval_s == 7
