"""Raw-frame builders and the oracle for the protocol-hardening tests (decoding, names, protocol edges).

Fixtures here are imported by the test modules that use them; the oracle node is one per test session
whichever module asks first (a module-level singleton stopped at exit).
"""

from __future__ import annotations

import atexit
import os
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.compat.rabbitmq_node import RABBITMQ_SERVER, RabbitMQNode, rabbitmq_available
from tests.integration.raw_amqp import RawAMQP, SocketClosed

FRAME_END = b"\xce"
QUEUE_DECLARE = 0x0032000A
BASIC_PUBLISH = 0x003C0028

_ORACLE: list[RabbitMQNode] = []


def frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    return struct.pack("!BHI", frame_type, channel, len(payload)) + payload + FRAME_END


def shortstr(value: bytes) -> bytes:
    return bytes((len(value),)) + value


def longstr(value: bytes) -> bytes:
    return struct.pack("!I", len(value)) + value


def queue_declare(name: bytes, arguments: bytes, bits: int = 0) -> bytes:
    """A queue.declare method payload; ``arguments`` is the raw table with its length prefix."""
    return struct.pack("!IH", QUEUE_DECLARE, 0) + shortstr(name) + bytes((bits,)) + arguments


def publish_frames(channel: int, exchange: bytes, routing_key: bytes, headers: bytes, body: bytes) -> bytes:
    """basic.publish, a content header whose only property is ``headers`` (a raw table), and the body."""
    method = struct.pack("!IH", BASIC_PUBLISH, 0) + shortstr(exchange) + shortstr(routing_key) + b"\x00"
    content_header = struct.pack("!HHQH", 60, 0, len(body), 0x2000) + headers
    frames = frame(1, channel, method) + frame(2, channel, content_header)
    return frames + frame(3, channel, body) if body else frames


def void_array_table(fields: int) -> bytes:
    """A headers table ``{"a": [void] * fields}``: 1 byte per field, the cheapest flood to send."""
    array = b"A" + struct.pack("!I", fields) + b"V" * fields
    body = shortstr(b"a") + array
    return longstr(body)


def outcome(client: RawAMQP, timeout_s: float = 5.0) -> tuple[str, Any]:
    """What the broker did next: ``("close", Connection.Close)`` (close-ok sent), ``("dropped", None)``
    when the socket closed without a close frame, or ``("method", value)``; heartbeats skipped."""
    try:
        _, value = client.recv_method(timeout_s)
    except SocketClosed:
        return "dropped", None
    if getattr(value, "name", "") == "Connection.Close":
        try:
            client.send_bytes(frame(1, 0, struct.pack("!I", 0x000A0033)))  # connection.close-ok
        except OSError:
            pass
        return "close", value
    return "method", value


def params_of(url: str) -> tuple[str, int]:
    parsed = urlparse(url)
    return parsed.hostname or "127.0.0.1", parsed.port or 5672


@pytest.fixture(scope="session")
def oracle_url() -> Iterator[str]:
    """RabbitMQ to compare with: ``WARRENMQ_COMPAT_RABBITMQ_URL`` or one private node for the session."""
    external = os.environ.get("WARRENMQ_COMPAT_RABBITMQ_URL")
    if external:
        yield external
        return
    if not rabbitmq_available():
        pytest.skip(f"no RabbitMQ to compare with: {RABBITMQ_SERVER} is missing")
    if not _ORACLE:
        node = RabbitMQNode(Path(tempfile.mkdtemp(prefix="warrenmq-hardening-oracle-")))
        node.start()
        _ORACLE.append(node)
        atexit.register(node.stop)
    yield _ORACLE[0].url


def raw_client(url: str) -> RawAMQP:
    host, port = params_of(url)
    return RawAMQP(host, port)
