"""Argument tables nested as deep as RabbitMQ accepts them survive the store and the management API.

A durable queue declared with a 10,000-deep argument table used to answer 541 (the store's JSON encoder
recursed past Python's limit at ~330 levels) and, once declared, made GET /api/queues answer 500 for
everyone. RabbitMQ 3.10 declares it (see test_decoding's side-by-side case), keeps it across a restart and
lists it.
"""

from __future__ import annotations

import base64
import signal
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BrokerProcess, start_broker_process
from tests.hardening.wire import frame, longstr, outcome, queue_declare, raw_client

DURABLE = 0x02


def _nested(depth: int) -> bytes:
    table = b""
    for _ in range(depth):
        table = b"\x01kF" + longstr(table)
    return longstr(table)


def _declare(broker: BrokerProcess, name: bytes, arguments: bytes) -> tuple[str, Any]:
    client = raw_client(broker.url)
    try:
        client.opened()
        client.send_bytes(frame(1, 1, queue_declare(name, arguments, bits=DURABLE)))
        return outcome(client)
    finally:
        client.close()


def _api_queue_depth(broker: BrokerProcess, name: str) -> int:
    port = broker.ready["management_port"]
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/queues/%2F/{name}")
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        text: str = response.read().decode()
    # Counted in the text: the json module cannot read a body this deep back.
    return text.count('{"k":')


@pytest.mark.parametrize("depth", [400, 10_000])
def test_durable_queue_with_deeply_nested_arguments_is_stored_recovered_and_listed(
    tmp_path: Path, depth: int
) -> None:
    data_dir = tmp_path / "data"
    arguments = _nested(depth)
    broker = start_broker_process("--data-dir", str(data_dir))
    try:
        kind, reply = _declare(broker, b"deep", arguments)
        assert (kind, getattr(reply, "name", None)) == ("method", "Queue.DeclareOk"), reply
        assert _api_queue_depth(broker, "deep") == depth
    finally:
        broker.stop(signal.SIGTERM)
    broker = start_broker_process("--data-dir", str(data_dir))
    try:
        assert broker.ready["recovered"]["queues"] == 1  # type: ignore[index]
        kind, reply = _declare(broker, b"deep", arguments)
        assert (kind, getattr(reply, "name", None)) == ("method", "Queue.DeclareOk"), reply
        # The recovered arguments are the declared ones, every level of them.
        assert _api_queue_depth(broker, "deep") == depth
    finally:
        broker.stop(signal.SIGTERM)
