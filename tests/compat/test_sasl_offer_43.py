"""The SASL mechanisms ``--profile rabbitmq-4.3`` offers in AMQP 0-9-1's connection.start, against the
RabbitMQ 4.0.5 oracle. No 4.3 node runs here; 4.3's source keeps 4.0's default ``auth_mechanisms`` (PLAIN,
AMQPLAIN, ANONYMOUS) and rabbit_reader still offers them in the mechanism registry's order, so a 4.3 node
offers what the 4.0.5 node offers, and logs an ANONYMOUS start-ok in as guest from loopback as it does."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.compat.amqp10_support import RABBITMQ4

if TYPE_CHECKING:
    from tests.conftest import BrokerProcess

pytestmark = pytest.mark.compat

WARRENMQ_43 = "warrenmq-4.3"
_FRAME_END = b"\xce"


@pytest.fixture(scope="module")
def warrenmq_43() -> Iterator[BrokerProcess]:
    from tests.conftest import start_broker_process

    broker = start_broker_process("--profile", "rabbitmq-4.3")
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(params=[WARRENMQ_43, RABBITMQ4])
def port(request: pytest.FixtureRequest) -> int:
    if request.param == WARRENMQ_43:
        return int(request.getfixturevalue("warrenmq_43").port)
    return int(request.getfixturevalue("rabbitmq4_node").port)


def _frame(sock: socket.socket) -> tuple[int, bytes]:
    """The next frame's type and payload."""
    data = b""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if len(data) >= 7:
            size = struct.unpack(">I", data[3:7])[0]
            if len(data) >= 8 + size:
                assert data[7 + size : 8 + size] == _FRAME_END
                return data[0], data[7 : 7 + size]
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    raise AssertionError(f"no whole frame in 10 s: {data!r}")


def _mechanisms(payload: bytes) -> list[str]:
    """connection.start's mechanisms (class 10, method 10: versions, server-properties, mechanisms)."""
    assert payload[:4] == b"\x00\x0a\x00\x0a", payload[:4]
    table_size = struct.unpack(">I", payload[6:10])[0]
    at = 10 + table_size
    size = struct.unpack(">I", payload[at : at + 4])[0]
    return payload[at + 4 : at + 4 + size].decode().split()


def _start_ok_anonymous() -> bytes:
    """connection.start-ok: empty client properties, mechanism ANONYMOUS, an empty response, en_US."""
    args = b"\x00\x00\x00\x00" + b"\x09ANONYMOUS" + b"\x00\x00\x00\x00" + b"\x05en_US"
    payload = b"\x00\x0a\x00\x0b" + args
    return b"\x01\x00\x00" + struct.pack(">I", len(payload)) + payload + _FRAME_END


def test_connection_start_offers_anonymous_and_it_logs_in(port: int) -> None:
    """The same three mechanisms (their order comes from RabbitMQ's registry and changes between boots of
    one 4.0.5 node: WarrenMQ sends the order seen most, ANONYMOUS PLAIN AMQPLAIN), and ANONYMOUS reaches
    connection.tune."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"AMQP\x00\x00\x09\x01")
        frame_type, start = _frame(sock)
        assert frame_type == 1
        offered = _mechanisms(start)
        sock.sendall(_start_ok_anonymous())
        frame_type, tune = _frame(sock)
    assert sorted(offered) == ["AMQPLAIN", "ANONYMOUS", "PLAIN"]
    assert offered[0] == "ANONYMOUS"
    assert (frame_type, tune[:4]) == (1, b"\x00\x0a\x00\x1e")  # connection.tune
