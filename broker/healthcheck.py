"""`warrenmq healthcheck`: one real AMQP 0-9-1 handshake (start, tune, open) and a clean close; exit 0 when
the broker opened the connection, 1 otherwise. The Docker HEALTHCHECK runs it.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from urllib.parse import unquote, urlparse

from pamqp import commands, frame, header
from pamqp.base import Frame
from pamqp.exceptions import UnmarshalingException


class HealthcheckFailed(Exception):
    pass


def default_url() -> str:
    port = os.environ.get("WARRENMQ_PORT", "5672")
    return f"amqp://guest:guest@127.0.0.1:{port}/"


class _Conn:
    def __init__(self, host: str, port: int, deadline: float) -> None:
        self.deadline = deadline
        self.sock = socket.create_connection((host, port), timeout=max(0.01, deadline - time.monotonic()))
        # tune-ok and open go back to back: without this, Nagle holds open-ok back by a delayed ACK (40 ms).
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def send(self, value: Frame | header.ProtocolHeader) -> None:
        data = value.marshal() if isinstance(value, header.ProtocolHeader) else frame.marshal(value, 0)
        self.sock.sendall(data)

    def expect(self, kind: type[Frame]) -> Frame:
        while True:
            if self.buffer:
                try:
                    consumed, _channel, value = frame.unmarshal(self.buffer)
                except UnmarshalingException:
                    pass
                else:
                    self.buffer = self.buffer[consumed:]
                    if isinstance(value, kind):
                        return value
                    if isinstance(value, commands.Connection.Close):
                        raise HealthcheckFailed(f"broker closed the connection: {value.reply_text}")
                    continue  # heartbeats and anything else before the answer
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise HealthcheckFailed(f"timed out waiting for {kind.__name__}")
            self.sock.settimeout(remaining)
            data = self.sock.recv(65536)
            if not data:
                raise HealthcheckFailed(f"connection closed before {kind.__name__}")
            self.buffer += data


def check(url: str, timeout_s: float = 5.0) -> None:
    """Raise HealthcheckFailed (or OSError) unless a full handshake on ``url`` succeeds."""
    parsed = urlparse(url)
    if parsed.scheme != "amqp":
        raise HealthcheckFailed(f"not an amqp:// URL: {url}")
    vhost = unquote(parsed.path[1:]) if parsed.path not in ("", "/") else "/"
    user, password = unquote(parsed.username or "guest"), unquote(parsed.password or "guest")
    conn = _Conn(parsed.hostname or "127.0.0.1", parsed.port or 5672, time.monotonic() + timeout_s)
    try:
        conn.send(header.ProtocolHeader())
        conn.expect(commands.Connection.Start)
        conn.send(
            commands.Connection.StartOk(
                client_properties={
                    "product": "warrenmq-healthcheck",
                    "capabilities": {"authentication_failure_close": True},
                },
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
        conn.send(
            commands.Connection.Close(reply_code=200, reply_text="healthcheck", class_id=0, method_id=0)
        )
        conn.expect(commands.Connection.CloseOk)
    finally:
        conn.sock.close()


def main(url: str | None, timeout_s: float) -> int:
    target = url or default_url()
    try:
        check(target, timeout_s)
    except (HealthcheckFailed, OSError) as error:
        print(f"warrenmq healthcheck: {target}: {error}", file=sys.stderr)
        return 1
    return 0
