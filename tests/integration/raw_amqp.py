"""A tiny blocking raw AMQP 0-9-1 client (pamqp frames) for the suites that speak the wire themselves."""

from __future__ import annotations

import socket
import time
from typing import Any

from pamqp import commands, frame, header
from pamqp import exceptions as pamqp_exceptions
from pamqp.base import Frame
from pamqp.body import ContentBody
from pamqp.common import FieldTable
from pamqp.heartbeat import Heartbeat

from tests.integration.helpers import DEFAULT_TIMEOUT_S


class SocketClosed(Exception):
    """The broker closed (FIN or RST) the TCP connection."""


class RawAMQP:
    """A minimal blocking AMQP 0-9-1 client made of pamqp frames; one socket, no background thread."""

    def __init__(self, host: str, port: int, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.timeout_s = timeout_s
        self._buffer = b""
        self.start: commands.Connection.Start | None = None
        self.tune: commands.Connection.Tune | None = None

    # -- transport -------------------------------------------------------------------------------------------
    def send(self, value: Frame | ContentBody | Heartbeat | header.ContentHeader, channel: int = 0) -> None:
        self.sock.sendall(frame.marshal(value, channel))

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self, timeout_s: float | None = None) -> tuple[int, Any]:
        """The next frame as (channel, pamqp value); raises SocketClosed or TimeoutError."""
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while True:
            if self._buffer:
                try:
                    consumed, channel, value = frame.unmarshal(self._buffer)
                except pamqp_exceptions.UnmarshalingException:
                    pass
                else:
                    self._buffer = self._buffer[consumed:]
                    return channel, value
            self.read_more(deadline)

    def read_more(self, deadline: float) -> None:
        """Append what the socket has to the buffer, waiting until ``deadline`` (time.monotonic) at most;
        raises SocketClosed or TimeoutError."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no frame from the broker before the deadline")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError) as exc:
                raise SocketClosed(str(exc)) from exc
            except TimeoutError:
                continue
            if not data:
                raise SocketClosed("EOF")
            self._buffer += data
            return

    def recv_method(self, timeout_s: float | None = None) -> tuple[int, Any]:
        """Like recv, skipping heartbeats."""
        while True:
            channel, value = self.recv(timeout_s)
            if not isinstance(value, Heartbeat):
                return channel, value

    def expect(self, kind: type[Any], channel: int | None = None) -> Any:
        got_channel, value = self.recv_method()
        assert isinstance(value, kind), (
            f"expected {kind.__name__}, got {type(value).__name__}: {describe(value)}"
        )
        if channel is not None:
            assert got_channel == channel, f"{kind.__name__} arrived on channel {got_channel}, not {channel}"
        return value

    def expect_closed(self, timeout_s: float | None = None) -> None:
        """The broker closes the socket (frames still in flight are read and discarded)."""
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while True:
            try:
                self.recv(max(0.0, deadline - time.monotonic()))
            except SocketClosed:
                return
            except TimeoutError:
                raise AssertionError("the broker did not close the socket") from None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    # -- handshake -------------------------------------------------------------------------------------------
    def send_header(self) -> commands.Connection.Start:
        """Send the 0-9-1 protocol header and read connection.start."""
        self.send_bytes(header.ProtocolHeader().marshal())
        self.start = self.expect(commands.Connection.Start, channel=0)
        return self.start

    def start_ok(
        self,
        username: str = "guest",
        password: str = "guest",
        *,
        failure_close: bool = True,
    ) -> None:
        """Answer connection.start with PLAIN credentials (with or without authentication_failure_close)."""
        capabilities: FieldTable = {
            "authentication_failure_close": failure_close,
            "consumer_cancel_notify": True,
        }
        self.send(
            commands.Connection.StartOk(
                client_properties={"product": "warrenmq-tests", "capabilities": capabilities},
                mechanism="PLAIN",
                response=f"\0{username}\0{password}",
                locale="en_US",
            )
        )

    def tune_ok(
        self, channel_max: int | None = None, frame_max: int | None = None, heartbeat: int = 0
    ) -> None:
        """Read connection.tune and answer it (the server's values unless overridden)."""
        self.tune = self.expect(commands.Connection.Tune, channel=0)
        self.send(
            commands.Connection.TuneOk(
                channel_max=self.tune.channel_max if channel_max is None else channel_max,
                frame_max=self.tune.frame_max if frame_max is None else frame_max,
                heartbeat=heartbeat,
            )
        )

    def handshake(
        self,
        username: str = "guest",
        password: str = "guest",
        vhost: str = "/",
        heartbeat: int = 0,
        channel_max: int | None = None,
    ) -> commands.Connection.OpenOk:
        self.send_header()
        self.start_ok(username, password)
        self.tune_ok(channel_max=channel_max, heartbeat=heartbeat)
        self.send(commands.Connection.Open(virtual_host=vhost))
        ok: commands.Connection.OpenOk = self.expect(commands.Connection.OpenOk, channel=0)
        return ok

    def open_channel(self, channel: int = 1) -> None:
        self.send(commands.Channel.Open(), channel)
        self.expect(commands.Channel.OpenOk, channel=channel)

    def opened(self, channel: int = 1) -> RawAMQP:
        """Handshake as guest on vhost / and open ``channel``: ready for methods on it."""
        self.handshake()
        self.open_channel(channel)
        return self

    def publish(
        self,
        channel: int,
        exchange: str,
        routing_key: str,
        body: bytes,
        *,
        mandatory: bool = False,
        immediate: bool = False,
        properties: commands.Basic.Properties | None = None,
    ) -> None:
        self.send(
            commands.Basic.Publish(
                exchange=exchange, routing_key=routing_key, mandatory=mandatory, immediate=immediate
            ),
            channel,
        )
        self.send(header.ContentHeader(0, len(body), properties or commands.Basic.Properties()), channel)
        if body:
            self.send(ContentBody(body), channel)

    def expect_connection_close(self) -> commands.Connection.Close:
        close: commands.Connection.Close = self.expect(commands.Connection.Close, channel=0)
        try:
            self.send(commands.Connection.CloseOk())
        except OSError:
            pass
        return close

    def __enter__(self) -> RawAMQP:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def describe(value: Any) -> str:
    try:
        return repr(dict(value))
    except (TypeError, ValueError):
        return repr(value)
