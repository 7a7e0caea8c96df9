"""asyncio.Protocol for one client socket: feeds the session, coalesces its writes, applies backpressure and
timers.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol, cast

from broker.core.model.clock import TimerHandle
from broker.server.flow_control import ConnectionThrottle
from broker.server.host import ServerHost
from broker.server.runtime import connection_closed
from broker.server.sockets import unread_bytes
from broker.session.config import FLOW_MORE_CREDIT
from broker.session.connection_session import ConnectionSession
from broker.session.lifecycle_events import Endpoint
from protocol.connection import STOPPING, ConnectionState

if TYPE_CHECKING:
    from broker.server.amqp10_protocol import AMQP10Protocol
    from broker.session.faults import SessionFaults

# Outgoing bytes buffered by the transport before we stop delivering to (and reading from) this peer.
WRITE_HIGH_WATER = 4 * 1024 * 1024
WRITE_LOW_WATER = 1 * 1024 * 1024
# Why reading from the socket is paused; it resumes when no reason is left.
PAUSE_WRITE = "write"
PAUSE_FLOW = "flow"
# How long a connection out of publishing credit is not read (state "flow") before it gets more. RabbitMQ's
# queues grant credit back as they work, within milliseconds; at 50 ms a fast consumer's queue ran dry during
# every pause and publish -> consume was capped near 57k msg/s (perf/ab.py pubsub: 157k at 5 ms).
FLOW_PAUSE_S = 0.005


class ConnectionHost(ServerHost, Protocol):
    """What a 0-9-1 client connection asks of the server that accepted it (``broker.server.server.Server``),
    beyond what every connection asks (``broker.server.host``)."""

    faults: SessionFaults | None  # installed on each new session

    @property
    def amqp10_connections(self) -> set[AMQP10Protocol]:
        """Open AMQP 1.0 connections (``broker.server.amqp10_protocol``): one takes over a socket whose
        header is AMQP 1.0's."""
        ...

    @property
    def connections(self) -> set[AMQPProtocol]:
        """Open client connections: each adds itself when made and discards itself when lost."""
        ...


class AMQPProtocol(asyncio.Protocol):
    """Implements ``broker.session.transport.Transport`` for its session. No AMQP logic lives here."""

    def __init__(self, server: ConnectionHost) -> None:
        self.server = server
        self.loop = server.loop
        self.transport: asyncio.Transport | None = None
        self.session: ConnectionSession | None = None
        self._out: list[bytes] = []
        self._flush_scheduled = False
        self._closing = False
        self._close_due = 0.0  # when the "close" timer fires (clock.monotonic_s)
        # One handle per purpose: "handshake", "heartbeat", "close".
        self._timers: dict[str, TimerHandle] = {}
        self._heartbeat_started = False
        self.throttle = ConnectionThrottle(self)
        self._read_pauses: set[str] = set()
        # Connection statistics as RabbitMQ's (recv_oct/recv_cnt: bytes and socket reads; send_*: writes).
        self.recv_oct = self.recv_cnt = self.send_oct = self.send_cnt = 0
        self.connected_at_ms = 0
        self._fd = -1  # the socket's descriptor, for the heartbeat receiver's look at unread input

    # -- asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCPTransport implements asyncio.Transport without subclassing it.
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER, low=WRITE_LOW_WATER)
        sock = transport.get_extra_info("socket")
        self._fd = sock.fileno() if sock is not None else -1
        peer = transport.get_extra_info("peername")
        peer_text = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.session = ConnectionSession(self.server.broker, self.server.config.session, self, peer_text)
        self.connected_at_ms = self.server.clock.now_ms()
        local = transport.get_extra_info("sockname")
        if isinstance(peer, tuple) and isinstance(local, tuple):
            self.session.endpoint = Endpoint(
                peer[0],
                peer[1],
                local[0],
                local[1],
                transport.get_extra_info("ssl_object") is not None,
                self.connected_at_ms,
            )
        self.session.faults = self.server.faults
        self.session.on_first_publish = self._first_publish
        self.session.on_other_header = self._other_header
        if transport.get_extra_info("ssl_object") is not None:
            # Only a TLS listener's connections get here, and it imported broker.server.tls already; a
            # broker without one never imports it.
            from broker.server.tls import login_name

            self.session.peer_cert_login = login_name(
                transport.get_extra_info("peercert"), self.server.config.ssl_cert_login_from
            )
        self.server.connections.add(self)
        self._timers["handshake"] = self.server.clock.call_later(
            self.server.config.session.handshake_timeout_s, self._handshake_check
        )

    def data_received(self, data: bytes) -> None:
        session = self.session
        assert session is not None
        self.recv_oct += len(data)
        self.recv_cnt += 1
        session.data_received(data)
        if session.flow_credit <= 0 and PAUSE_FLOW not in self._read_pauses:
            self.pause_reading(PAUSE_FLOW)
            self._timers["flow"] = self.server.clock.call_later(FLOW_PAUSE_S, self._flow_granted)
        if not self._heartbeat_started and session.heartbeat.interval_s:
            # From tune-ok on, as rabbit_reader starts its heartbeaters there (not at connection.open).
            self._heartbeat_started = True
            self._schedule_heartbeat()

    def eof_received(self) -> bool | None:
        return None  # let asyncio close the transport; connection_lost cleans up

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._out.clear()
        if self.session is not None:
            self.session.connection_lost()
        connections = self.server.connections
        connections.discard(self)
        connection_closed(len(connections))  # its objects sit in reference cycles (see broker.server.runtime)

    def pause_writing(self) -> None:
        # The peer is not reading: stop deliveries to it and stop reading its input until its buffer drains.
        self.pause_reading(PAUSE_WRITE)
        if self.session is not None:
            self.session.set_writable(False)

    def resume_writing(self) -> None:
        self.resume_reading(PAUSE_WRITE)
        if self.session is not None:
            self.session.set_writable(True)

    # -- read pauses (write backpressure, resource alarms): each reason holds reading off until resumed

    def pause_reading(self, reason: str) -> None:
        if not self._read_pauses and self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()
        self._read_pauses.add(reason)

    def resume_reading(self, reason: str) -> None:
        if reason not in self._read_pauses:
            return
        self._read_pauses.discard(reason)
        if not self._read_pauses and self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def release_reading(self) -> None:
        """Read again whatever paused it (shutdown: the client's close-ok must be read)."""
        self._read_pauses.clear()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    @property
    def reading_paused(self) -> bool:
        return bool(self._read_pauses)

    def _first_publish(self) -> None:
        # rabbit_reader blocks a connection at its first publish while an alarm is in effect: the
        # connection.blocked goes out before the replies to anything the client sent after the publish.
        reasons = self.server.flow.reasons
        if reasons:
            self.throttle.update(reasons)

    def _other_header(self, received: bytes) -> bool:
        """An AMQP 1.0 header on a profile that speaks 1.0: the socket goes to an AMQP 1.0 connection
        (``broker.server.amqp10_protocol``, imported only then), and this protocol steps aside."""
        if not self.server.broker.profile.amqp10 or self.transport is None:
            return False
        from protocol.amqp10.frames import is_amqp10_header

        if not is_amqp10_header(received):
            return False
        from broker.server.amqp10_protocol import AMQP10Protocol

        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._closing = True  # nothing more goes out through this protocol
        self.server.connections.discard(self)
        peer = self.session.peer if self.session is not None else ""
        AMQP10Protocol.take_over(self.server, self.transport, peer, received)
        return True

    @property
    def in_flow(self) -> bool:
        """Out of publishing credit (rabbit_reader's "flow" state in the management API)."""
        return PAUSE_FLOW in self._read_pauses

    def _flow_granted(self) -> None:
        self._timers.pop("flow", None)
        if self.session is not None:
            self.session.flow_credit = FLOW_MORE_CREDIT
        self.resume_reading(PAUSE_FLOW)

    # -- Transport (used by the session)

    def write(self, data: bytes) -> None:
        self._out.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self._flush)

    @property
    def name(self) -> str:
        """RabbitMQ's connection name: "client-ip:port -> server-ip:port" (management API, faults)."""
        if self.transport is None:
            return ""
        peer = self.transport.get_extra_info("peername")
        local = self.transport.get_extra_info("sockname")
        if isinstance(peer, tuple) and isinstance(local, tuple):
            return f"{peer[0]}:{peer[1]} -> {local[0]}:{local[1]}"
        return str(peer)

    @property
    def pending_output(self) -> bool:
        """Frames queued for this loop turn's coalesced write (the test `settle()` barrier waits on it)."""
        return self._flush_scheduled or bool(self._out)

    def _flush(self) -> None:
        self._flush_scheduled = False
        out = self._out
        if not out:
            return
        self._out = []
        transport = self.transport
        if transport is not None and not transport.is_closing():
            self.send_oct += sum(map(len, out))
            self.send_cnt += 1
            transport.writelines(out)

    def close(self, after_s: float | None = None) -> None:
        if after_s is not None:
            # The earliest deadline wins: a frame error 3 s into a 30 s closing wait ends it sooner.
            due = self.server.clock.monotonic_s() + after_s
            if "close" not in self._timers or due < self._close_due:
                if "close" in self._timers:
                    self._timers["close"].cancel()
                self._close_due = due
                self._timers["close"] = self.server.clock.call_later(after_s, self.close)
            return
        if self._closing:
            return
        self._closing = True
        self._flush()
        if self.transport is not None:
            self.transport.close()

    # -- timers

    def _handshake_check(self) -> None:
        # rabbit_reader's handshake_timeout: a peer that has not opened the connection in time is dropped
        # (running, closing and closed connections ignore it: one closed in time waits for its client).
        session = self.session
        if session is None or self._closing or session.state is ConnectionState.OPEN:
            return
        if session.state not in STOPPING:
            session.handshake_timed_out()
            self.close()

    def _schedule_heartbeat(self) -> None:
        session = self.session
        if session is None or self._closing:
            return
        self._timers["heartbeat"] = self.server.clock.call_later(
            session.heartbeat.interval_s / 2, self._heartbeat_tick
        )

    def _heartbeat_tick(self) -> None:
        if self.session is None or self._closing:
            return
        heartbeat = self.session.heartbeat
        if self._read_pauses:
            # Unread input is not silence: RabbitMQ pauses its heartbeat monitor while a connection is
            # blocked.
            heartbeat.received = True
        elif not heartbeat.received and unread_bytes(self._fd):
            # Nor is input the loop has not read yet (a loop behind its timers: a busy node, thousands of
            # handshakes): rabbit_heartbeat checks the socket's recv_oct, what the kernel received.
            heartbeat.received = True
        self.session.heartbeat_tick()
        self._schedule_heartbeat()
