"""A minimal blocking AMQP client for the load generator: handshake, RPCs, raw frame I/O on a socket.

Built on our own `protocol` package: publishing writes pre-encoded bytes and consuming walks frame headers, so
no client library sits between the generator and the broker under test.
"""

from __future__ import annotations

import socket
import struct
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from pamqp import commands
from pamqp.base import Frame

from protocol.codec import decode_method, encode_header_payload, encode_method, make_method
from protocol.fastpath import BASIC_DELIVER
from protocol.framing import FRAME_METHOD, PROTOCOL_HEADER, FrameBuffer

M = TypeVar("M", bound=Frame)
_DELIVER_PREFIX = struct.pack("!HH", BASIC_DELIVER >> 16, BASIC_DELIVER & 0xFFFF)
_FRAME = struct.Struct("!BHI")


class BenchError(RuntimeError):
    """The broker refused or closed something the scenario needed."""


def parse_url(url: str) -> tuple[str, int, str, str, str]:
    parsed = urlparse(url)
    if parsed.scheme != "amqp":
        raise BenchError(f"only amqp:// URLs are supported, got {url!r}")
    vhost = unquote(parsed.path[1:]) if parsed.path and parsed.path != "/" else "/"
    return (
        parsed.hostname or "127.0.0.1",
        parsed.port or 5672,
        unquote(parsed.username or "guest"),
        unquote(parsed.password or "guest"),
        vhost,
    )


def publish_frames(
    channel: int, exchange: str, routing_key: str, body: bytes, persistent: bool = False
) -> bytes:
    """One basic.publish with its content, encoded once so a producer can write it many times."""
    properties = commands.Basic.Properties(delivery_mode=2 if persistent else 1)
    header = encode_header_payload(len(body), properties)
    method = encode_method(
        channel, make_method(commands.Basic.Publish, exchange=exchange, routing_key=routing_key)
    )
    frames = [method, _FRAME.pack(2, channel, len(header)) + header + b"\xce"]
    if body:
        frames.append(_FRAME.pack(3, channel, len(body)) + body + b"\xce")
    return b"".join(frames)


class Connection:
    """One AMQP connection on a blocking socket; ``pending`` keeps frames read while awaiting an RPC reply."""

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        host, port, username, password, vhost = parse_url(url)
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = FrameBuffer(0, expect_protocol_header=False)
        self.pending: list[tuple[int, int, bytes]] = []
        self.sock.sendall(PROTOCOL_HEADER)
        self.expect(0, commands.Connection.Start)
        self.send_method(
            0,
            commands.Connection.StartOk(
                client_properties={"product": "warrenmq-bench", "capabilities": {"publisher_confirms": True}},
                mechanism="PLAIN",
                response=f"\0{username}\0{password}",
            ),
        )
        tune = self.expect(0, commands.Connection.Tune)
        self.frame_max = tune.frame_max or 131072
        self.send_method(
            0, commands.Connection.TuneOk(channel_max=tune.channel_max, frame_max=self.frame_max, heartbeat=0)
        )
        self.send_method(0, commands.Connection.Open(virtual_host=vhost))
        self.expect(0, commands.Connection.OpenOk)

    def send_method(self, channel: int, method: Frame) -> None:
        self.sock.sendall(encode_method(channel, method))

    def read_frames(self) -> list[tuple[int, int, bytes]]:
        data = self.sock.recv(1 << 20)
        if not data:
            raise BenchError("the broker closed the connection")
        return self.buffer.feed(data)

    def expect(self, channel: int, kind: type[M]) -> M:
        """Read until a method of ``kind`` arrives on ``channel``; a close from the broker is an error."""
        while True:
            for index, (frame_type, frame_channel, payload) in enumerate(self.pending):
                if frame_type == FRAME_METHOD and frame_channel == channel:
                    method = decode_method(payload)
                    if isinstance(method, kind):
                        del self.pending[index]
                        return method
                    if isinstance(method, commands.Connection.Close | commands.Channel.Close):
                        raise BenchError(f"broker closed: {method.reply_code} {method.reply_text}")
            self.pending.extend(self.read_frames())

    def rpc(self, channel: int, method: Frame, reply: type[M]) -> M:
        self.send_method(channel, method)
        return self.expect(channel, reply)

    def open_channel(self, channel: int = 1) -> None:
        self.rpc(channel, commands.Channel.Open(), commands.Channel.OpenOk)

    def declare_queue(
        self, channel: int, name: str, durable: bool = False, **kw: Any
    ) -> commands.Queue.DeclareOk:
        method = make_method(commands.Queue.Declare, queue=name, durable=durable, arguments={}, **kw)
        return self.rpc(channel, method, commands.Queue.DeclareOk)

    def message_count(self, channel: int, name: str) -> int:
        method = make_method(commands.Queue.Declare, queue=name, passive=True, arguments={})
        return int(self.rpc(channel, method, commands.Queue.DeclareOk).message_count or 0)

    def close(self) -> None:
        try:
            self.send_method(
                0, commands.Connection.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)
            )
            self.expect(0, commands.Connection.CloseOk)
        except (OSError, BenchError):
            pass
        finally:
            self.sock.close()


def count_deliveries(frames: list[tuple[int, int, bytes]]) -> int:
    """Deliveries among raw frames, by their method id alone (no decoding)."""
    return sum(
        1
        for frame_type, _, payload in frames
        if frame_type == FRAME_METHOD and payload[:4] == _DELIVER_PREFIX
    )
