"""What the CLIs ask the broker, over plain AMQP 0-9-1 and TCP (RabbitMQ's CLIs use Erlang distribution;
WarrenMQ answers the same questions on its AMQP port).

- ``server_properties``: the protocol header and the broker's connection.start, no login: the broker is up.
- ``local_alarms``: a full login, channel.open, one unroutable publish, then channel.close. While a resource
  alarm is in effect RabbitMQ blocks a connection at its first publish (rabbit_reader: connection.blocked,
  and nothing after the publish is read), so connection.blocked arrives instead of channel.close-ok: no
  timing window. (It sends nothing at connection.open: checked against RabbitMQ 3.10.)
"""

from __future__ import annotations

import socket
import time
from typing import Any

from pamqp import commands, frame, header
from pamqp.base import Frame
from pamqp.exceptions import UnmarshalingException


class ProbeFailed(Exception):
    pass


class _Connection:
    def __init__(self, host: str, port: int, deadline: float) -> None:
        self.deadline = deadline
        self.sock = socket.create_connection((host, port), timeout=max(0.01, deadline - time.monotonic()))
        # tune-ok and open go back to back: without this, Nagle holds open-ok back by a delayed ACK (40 ms).
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def send(self, value: Frame | header.ProtocolHeader | header.ContentHeader, channel: int = 0) -> None:
        data = value.marshal() if isinstance(value, header.ProtocolHeader) else frame.marshal(value, channel)
        self.sock.sendall(data)

    def receive(self) -> Frame:
        while True:
            if self.buffer:
                try:
                    consumed, _channel, value = frame.unmarshal(self.buffer)
                except UnmarshalingException:
                    pass
                else:
                    self.buffer = self.buffer[consumed:]
                    if isinstance(value, commands.Connection.Close):
                        raise ProbeFailed(f"{value.reply_code} {value.reply_text}")
                    if isinstance(value, Frame):
                        return value
                    continue  # heartbeats
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise ProbeFailed("timed out")
            self.sock.settimeout(remaining)
            data = self.sock.recv(65536)
            if not data:
                raise ProbeFailed("connection closed by the broker")
            self.buffer += data

    def expect(self, kind: type[Frame], seen: list[Frame] | None = None) -> Frame:
        while True:
            value = self.receive()
            if isinstance(value, kind):
                return value
            if seen is not None:
                seen.append(value)

    def close_cleanly(self, reply_text: str) -> None:
        self.send(commands.Connection.Close(reply_code=200, reply_text=reply_text, class_id=0, method_id=0))
        self.expect(commands.Connection.CloseOk)

    def close(self) -> None:
        self.sock.close()


def server_properties(host: str, port: int, timeout_s: float) -> dict[str, Any]:
    """The broker's connection.start server-properties (raises OSError or ProbeFailed)."""
    conn = _Connection(host, port, time.monotonic() + timeout_s)
    try:
        conn.send(header.ProtocolHeader())
        start = conn.expect(commands.Connection.Start)
        assert isinstance(start, commands.Connection.Start)
        return {
            k: v.decode() if isinstance(v, bytes) else v for k, v in (start.server_properties or {}).items()
        }
    finally:
        conn.close()


def open_connection(
    host: str,
    port: int,
    user: str,
    password: str,
    vhost: str,
    product: str,
    capabilities: dict[str, Any],
    timeout_s: float,
) -> _Connection:
    """A connection through start, PLAIN login, tune and open (raises OSError or ProbeFailed); the caller
    closes it. Shared by rabbitmq-diagnostics and ``warrenmq healthcheck``."""
    conn = _Connection(host, port, time.monotonic() + timeout_s)
    try:
        conn.send(header.ProtocolHeader())
        conn.expect(commands.Connection.Start)
        conn.send(
            commands.Connection.StartOk(
                client_properties={"product": product, "capabilities": capabilities},
                mechanism="PLAIN",
                response=f"\0{user}\0{password}",
                locale="en_US",
            )
        )
        tune = conn.expect(commands.Connection.Tune)
        assert isinstance(tune, commands.Connection.Tune)
        conn.send(
            commands.Connection.TuneOk(channel_max=tune.channel_max, frame_max=tune.frame_max, heartbeat=0)
        )
        conn.send(commands.Connection.Open(virtual_host=vhost))
        conn.expect(commands.Connection.OpenOk)
    except BaseException:
        conn.close()
        raise
    return conn


# No queue can have this name (amq.* is reserved), so the probe's message is dropped unrouted.
PROBE_ROUTING_KEY = "amq.warrenmq.diagnostics.check_local_alarms"


def local_alarms(host: str, port: int, user: str, password: str, vhost: str, timeout_s: float) -> list[str]:
    """The reasons of the connection.blocked the broker answers a publish with (none: no alarm)."""
    capabilities: dict[str, Any] = {"authentication_failure_close": True, "connection.blocked": True}
    product = "rabbitmq-diagnostics (WarrenMQ)"
    conn = open_connection(host, port, user, password, vhost, product, capabilities, timeout_s)
    try:
        seen: list[Frame] = []
        conn.send(commands.Channel.Open(), channel=1)
        conn.expect(commands.Channel.OpenOk, seen)
        conn.send(commands.Basic.Publish(exchange="", routing_key=PROBE_ROUTING_KEY), channel=1)
        conn.send(header.ContentHeader(0, 0, commands.Basic.Properties()), channel=1)
        conn.send(
            commands.Channel.Close(reply_code=200, reply_text="diagnostics", class_id=0, method_id=0), 1
        )
        while True:
            value = conn.receive()
            if isinstance(value, commands.Connection.Blocked):
                return [str(value.reason)]
            if isinstance(value, commands.Channel.CloseOk):
                break
        conn.close_cleanly("diagnostics")
    finally:
        conn.close()
    return []


def port_open(host: str, port: int, timeout_s: float) -> bool:
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError:
        return False
    return True
