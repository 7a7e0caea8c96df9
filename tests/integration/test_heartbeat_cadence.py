"""Heartbeats on a real socket, timed by the broker's manual clock: one on every idle half interval from
connection.tune-ok on, and a silent peer's socket closed without a close frame at the receiver's second silent
check, three intervals after tune-ok when the handshake was its last frame (rabbit_heartbeat; checked against
RabbitMQ 3.10.8 at heartbeat=2, and live in tests/compat/test_wire_fidelity.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from broker.server.sockets import unread_bytes
from broker.testing.embed import BrokerThread
from tests.compat.wire_frames import FRAME_HEARTBEAT, WireClient
from tests.integration.helpers import wait_until
from tests.integration.raw_amqp import SocketClosed

HEARTBEAT_S = 2


@pytest.fixture
def clocked() -> Iterator[tuple[BrokerThread, WireClient]]:
    with BrokerThread(manual_clock=True) as broker:
        client = WireClient.connect(broker.url)
        try:
            client.handshake(heartbeat=HEARTBEAT_S)  # then silence from the client
            yield broker, client
        finally:
            client.close()


def test_an_idle_connection_gets_a_heartbeat_every_half_interval(
    clocked: tuple[BrokerThread, WireClient],
) -> None:
    broker, client = clocked
    for _ in range(4):
        broker.advance_clock(HEARTBEAT_S / 2)
        frame = client.frame()
        assert (frame.frame_type, frame.channel, frame.payload) == (FRAME_HEARTBEAT, 0, b"")


def test_a_silent_peer_is_dropped_three_intervals_after_its_last_frame(
    clocked: tuple[BrokerThread, WireClient],
) -> None:
    broker, client = clocked
    broker.advance_clock(3 * HEARTBEAT_S - 0.1)
    heartbeats = [client.frame() for _ in range(5)]  # at 1, 2, 3, 4 and 5 s
    assert {frame.frame_type for frame in heartbeats} == {FRAME_HEARTBEAT}
    with pytest.raises(TimeoutError):
        client.frame(timeout_s=0.3)  # still open, nothing more to read
    broker.advance_clock(0.1)
    with pytest.raises(SocketClosed):
        client.frame()  # closed at once: no heartbeat and no connection.close first


def test_input_the_loop_has_not_read_yet_is_not_silence(clocked: tuple[BrokerThread, WireClient]) -> None:
    """A loop behind its timers: the client's heartbeat reached the broker's socket, but two receiver checks
    run before the loop reads it. rabbit_heartbeat counts what the kernel received (recv_oct), so RabbitMQ
    keeps such a peer; WarrenMQ looks at the socket's unread bytes."""
    broker, client = clocked

    def behind_its_timers() -> None:
        # On the broker's loop, in one callback: no read can run between the send and the ticks.
        [protocol] = broker.embedded.server.connections
        assert protocol.transport is not None
        socket_fd = protocol.transport.get_extra_info("socket").fileno()
        heartbeat = bytes((FRAME_HEARTBEAT, 0, 0, 0, 0, 0, 0, 0xCE))
        client.send_bytes(heartbeat)
        # Loopback delivers it into the broker's receive buffer in its own time.
        wait_until(
            lambda: unread_bytes(socket_fd) >= len(heartbeat), what="the heartbeat in the receive buffer"
        )
        # The check at 2 s finds the handshake; at 4 and 6 s only the unread heartbeat is there.
        broker.embedded.advance_clock(3 * HEARTBEAT_S)

    broker.call(behind_its_timers)
    client.open_channel()  # channel.open-ok: the connection is still there
