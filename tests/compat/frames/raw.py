"""A raw AMQP client for the frame scenarios: it writes exactly the bytes a step says, in one ``sendall``, and
reads until the answers the step expects have arrived (or the broker closed the socket).

Waiting for named answers, not for a quiet period, keeps each broker frame in the step that caused it on both
brokers (``compare.per_step``) without sleeping; ``settle_s`` adds a short quiet wait only to steps after
which a broker may send more on its own (a delivery after a recover).
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

from pamqp import commands, frame, header
from pamqp.base import Frame as Method
from pamqp.common import FieldTable

from protocol.codec import make_method

from .wire import Splitter, decode

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
STEP_TIMEOUT_S = 3.0
CLIENT_PROPERTIES: FieldTable = {
    "product": "warrenmq-frame-harness",
    "capabilities": {
        "authentication_failure_close": True,
        "basic.nack": True,
        "connection.blocked": True,
        "consumer_cancel_notify": True,
        "exchange_exchange_bindings": True,
        "publisher_confirms": True,
    },
}


def method(channel: int, value: Method) -> bytes:
    """A method frame; pamqp's name checks are skipped (a reply-to name is a legal queue name it refuses)."""
    value.validate = lambda: None  # type: ignore[method-assign]
    return frame.marshal(value, channel)


def raw_frame(kind: int, channel: int, payload: bytes) -> bytes:
    return struct.pack("!BHI", kind, channel, len(payload)) + payload + b"\xce"


def publish(
    channel: int,
    exchange: str,
    routing_key: str,
    body: bytes,
    properties: commands.Basic.Properties | None = None,
    mandatory: bool = False,
    frame_max: int = 131072,
) -> bytes:
    """basic.publish, its content header and the body cut into frames of at most ``frame_max``."""
    out = method(
        channel, commands.Basic.Publish(exchange=exchange, routing_key=routing_key, mandatory=mandatory)
    )
    return out + content(channel, body, properties, frame_max)


def content(
    channel: int, body: bytes, properties: commands.Basic.Properties | None = None, frame_max: int = 131072
) -> bytes:
    """A content header and the body cut into frames of at most ``frame_max``."""
    out = frame.marshal(
        header.ContentHeader(0, len(body), properties or commands.Basic.Properties()), channel
    )
    chunk = frame_max - 8
    for start in range(0, len(body), chunk):
        out += raw_frame(3, channel, body[start : start + chunk])
    return out


class RawClient:
    """One socket to the proxy; ``step`` writes and waits. Answers are kept as decoded records."""

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        self.sock = socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 5672), timeout=5)
        self.vhost = (parsed.path[1:] or "/") if parsed.path else "/"
        self._splitter = Splitter()
        self.closed = False

    def step(
        self,
        data: bytes,
        until: Iterable[str] = (),
        count: int = 1,
        closed: bool = False,
        settle_s: float = 0.0,
        timeout_s: float = STEP_TIMEOUT_S,
        until_any: Iterable[str] = (),
    ) -> list[dict[str, Any]]:
        """Write ``data``; read until each method named in ``until`` arrived (``count`` times in all for a
        single name), or any one named in ``until_any``, or the socket closed when ``closed``; then
        ``settle_s`` of quiet."""
        if data:
            self.sock.sendall(data)
        wanted = list(until)
        needed = {name: count if len(wanted) == 1 else 1 for name in wanted}
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + (timeout_s + 3.5 if closed else timeout_s)

        either = set(until_any)

        def satisfied() -> bool:
            if closed:
                return self.closed
            if either:
                return any(r.get("method") in either for r in seen)
            return all(sum(1 for r in seen if r.get("method") == n) >= k for n, k in needed.items())

        while not satisfied() and not self.closed and time.monotonic() < deadline:
            seen.extend(self._read(deadline - time.monotonic()))
        quiet_until = time.monotonic() + settle_s
        while settle_s and not self.closed and time.monotonic() < quiet_until:
            seen.extend(self._read(quiet_until - time.monotonic()))
        return seen

    def _read(self, timeout_s: float) -> list[dict[str, Any]]:
        self.sock.settimeout(max(0.01, timeout_s))
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return []
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return []
        return [decode(f) for f in self._splitter.feed(data)]

    def handshake(self, heartbeat: int = 0, frame_max: int = 131072, channel_max: int = 2047) -> None:
        """Protocol header through open-ok, as one step each (start, tune, open-ok)."""
        self.step(PROTOCOL_HEADER, until=["Connection.Start"])
        self.step(
            method(
                0,
                commands.Connection.StartOk(
                    client_properties=CLIENT_PROPERTIES, response="\0guest\0guest", mechanism="PLAIN"
                ),
            ),
            until=["Connection.Tune"],
        )
        tune_ok = commands.Connection.TuneOk(
            channel_max=channel_max, frame_max=frame_max, heartbeat=heartbeat
        )
        self.step(
            method(0, tune_ok) + method(0, commands.Connection.Open(virtual_host=self.vhost)),
            until=["Connection.OpenOk"],
        )

    def open_channel(self, channel: int) -> None:
        # out-of-band empty, as clients send it (pamqp's default is "0").
        opening = make_method(commands.Channel.Open, out_of_band="")
        self.step(method(channel, opening), until=["Channel.OpenOk"])

    def close(self) -> None:
        """Close politely when the connection is still up, then drop the socket."""
        if not self.closed:
            try:
                self.step(
                    method(
                        0,
                        commands.Connection.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0),
                    ),
                    until=["Connection.CloseOk"],
                )
            except OSError:
                pass
        self.sock.close()
