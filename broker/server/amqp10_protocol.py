"""The asyncio side of an AMQP 1.0 connection: the AMQP port's protocol hands a socket over to it when the
first octets are an AMQP 1.0 header (RabbitMQ 4 serves both protocols on one port; rabbit_reader hands such
a socket to rabbit_amqp_reader). Writes are coalesced per loop turn as for 0-9-1; no AMQP logic lives here."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable
from typing import Protocol

from broker.core.model.clock import TimerHandle
from broker.server.host import ServerHost
from broker.session.amqp10.connection import Connection
from broker.session.handlers.connection import is_loopback


class Amqp10Host(ServerHost, Protocol):
    """What an AMQP 1.0 connection asks of the server, beyond what every connection asks."""

    @property
    def amqp10_connections(self) -> set[AMQP10Protocol]:
        """Open AMQP 1.0 connections: each adds itself when it takes its socket over and discards itself
        when lost (the management API lists them)."""
        ...


_LINGER_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() resets the connection


class AMQP10Protocol(asyncio.Protocol):
    """Implements ``broker.session.amqp10.connection.Amqp10Transport`` for its connection."""

    def __init__(self, server: Amqp10Host, transport: asyncio.Transport, peer: str) -> None:
        self.server = server
        self.transport = transport
        self._out: list[bytes] = []
        self._flush_scheduled = False
        self._closing = False
        self._timers: dict[str, TimerHandle] = {}
        self.connected_at_ms = server.clock.now_ms()
        peername = transport.get_extra_info("peername")
        sockname = transport.get_extra_info("sockname")
        # RabbitMQ's connection name: "client-ip:port -> server-ip:port".
        self.name = (
            f"{peername[0]}:{peername[1]} -> {sockname[0]}:{sockname[1]}"
            if isinstance(peername, tuple) and isinstance(sockname, tuple)
            else peer
        )
        self.connection = Connection(server.broker, server.config.session, self, peer, is_loopback(peer))
        if transport.get_extra_info("ssl_object") is not None:
            # Only a TLS listener's connections get here, and it imported broker.server.tls already.
            from broker.server.tls import login_name

            self.connection.tls = True
            self.connection.peer_cert_login = login_name(
                transport.get_extra_info("peercert"), server.config.ssl_cert_login_from
            )

    @classmethod
    def take_over(
        cls, server: Amqp10Host, transport: asyncio.Transport, peer: str, received: bytes
    ) -> AMQP10Protocol:
        """Become the socket's protocol and read what the 0-9-1 side received so far."""
        protocol = cls(server, transport, peer)
        transport.set_protocol(protocol)
        server.amqp10_connections.add(protocol)
        protocol.connection.alarmed = server.flow.blocking
        protocol._timers["handshake"] = server.clock.call_later(
            server.config.session.handshake_timeout_s, protocol._handshake_check
        )
        protocol.data_received(received)
        return protocol

    # -- asyncio callbacks

    def data_received(self, data: bytes) -> None:
        connection = self.connection
        connection.data_received(data)
        if self._closing or connection.vhost is None:
            return
        if "idle" not in self._timers and connection.peer_idle_time_out_ms:
            self._schedule_idle()
        if "silence" not in self._timers and self.server.config.session.heartbeat_s:
            self._schedule_silence()

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._out.clear()
        self.connection.connection_lost()
        self.server.amqp10_connections.discard(self)

    def pause_writing(self) -> None:
        self.connection.set_writable(False)

    def resume_writing(self) -> None:
        self.connection.set_writable(True)

    # -- Amqp10Transport

    def write(self, data: bytes) -> None:
        self._out.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.server.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        out, self._out = self._out, []
        if out and not self.transport.is_closing():
            self.transport.writelines(out)

    def close(self, after_s: float | None = None) -> None:
        if after_s is not None:
            if "close" not in self._timers:
                self._timers["close"] = self.server.clock.call_later(after_s, self.close)
            return
        if self._closing:
            return
        self._closing = True
        self._flush()
        self.transport.close()

    def abort(self) -> None:
        """Write what is queued, then reset the socket (rabbit_net:fast_close)."""
        self._flush()
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            except OSError:
                pass
        self._closing = True
        self.transport.close()

    def later(self, delay_s: float, callback: Callable[[], None]) -> None:
        def fire() -> None:
            self._timers.pop(key, None)
            if not self.transport.is_closing():
                callback()

        key = f"later-{id(fire)}"
        self._timers[key] = self.server.clock.call_later(delay_s, fire)

    # -- timers

    def _handshake_check(self) -> None:
        self._timers.pop("handshake", None)
        if self.connection.vhost is None and not self.connection.closed:
            self.connection.connection_lost()
            self.close()

    def _schedule_silence(self) -> None:
        interval_s = self.server.config.session.heartbeat_s / 2
        self._timers["silence"] = self.server.clock.call_later(interval_s, self._silence_tick)

    def _silence_tick(self) -> None:
        if self._closing or self.connection.closed:
            return
        self.connection.silence_tick()
        self._schedule_silence()

    def _schedule_idle(self) -> None:
        interval_s = self.connection.peer_idle_time_out_ms / 2000
        self._timers["idle"] = self.server.clock.call_later(interval_s, self._idle_tick)

    def _idle_tick(self) -> None:
        if self._closing or self.connection.closed:
            return
        self.connection.idle_tick()
        self._schedule_idle()
