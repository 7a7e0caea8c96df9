"""Argument tables nested as deep as RabbitMQ accepts them survive the store and the management API.

A durable queue declared with a 10,000-deep argument table used to answer 541 (the store's JSON encoder
recursed past Python's limit at ~330 levels) and, once declared, made GET /api/queues answer 500 for
everyone. RabbitMQ 3.10 declares it (see test_decoding's side-by-side case), keeps it across a restart and
lists it.
"""

from __future__ import annotations

import base64
import signal
import struct
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BrokerProcess, start_broker_process
from tests.hardening.wire import frame, longstr, outcome, publish_frames, queue_declare, raw_client, shortstr

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


def _api(broker: BrokerProcess, path: str) -> str:
    """The body of a GET on the management API, as text: the json module cannot read one this deep."""
    port = broker.ready["management_port"]
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        text: str = response.read().decode()
    return text


def _api_queue_depth(broker: BrokerProcess, name: str) -> int:
    return _api(broker, f"/api/queues/%2F/{name}").count('{"k":')


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


EXCHANGE_DECLARE, QUEUE_BIND, QUEUE_UNBIND = 0x0028000A, 0x00320014, 0x00320032


def _send(broker: BrokerProcess, *payloads: bytes, first: bytes = b"") -> list[tuple[str, Any]]:
    """Each method payload's reply, after ``first`` (frames that get none) was sent."""
    client = raw_client(broker.url)
    try:
        client.opened()
        client.send_bytes(first)
        results = []
        for payload in payloads:
            client.send_bytes(frame(1, 1, payload))
            results.append(outcome(client))
        return results
    finally:
        client.close()


def _names(results: list[tuple[str, Any]]) -> list[str]:
    return [getattr(value, "name", kind) for kind, value in results]


def test_a_binding_with_deeply_nested_arguments_binds_routes_survives_a_restart_and_unbinds(
    tmp_path: Path,
) -> None:
    # A headers binding whose "k" is a 10,000-deep table (RabbitMQ takes it): freezing, matching, storing,
    # listing and unbinding it used to recurse past Python's limit (541, then 500 on /api/bindings).
    deep = _nested(10_000)
    arguments = longstr(shortstr(b"x-match") + b"S" + longstr(b"all") + shortstr(b"k") + b"F" + deep)
    declare = struct.pack("!IH", EXCHANGE_DECLARE, 0) + shortstr(b"hx") + shortstr(b"headers") + b"\x02"
    bind = struct.pack("!IH", QUEUE_BIND, 0) + shortstr(b"hq") + shortstr(b"hx") + shortstr(b"") + b"\x00"
    data_dir = tmp_path / "data"
    broker = start_broker_process("--data-dir", str(data_dir))
    try:
        results = _send(
            broker,
            declare + longstr(b""),
            queue_declare(b"hq", longstr(b""), bits=DURABLE),
            bind + arguments,
        )
        assert _names(results) == ["Exchange.DeclareOk", "Queue.DeclareOk", "Queue.BindOk"], results
        assert _api(broker, "/api/bindings/%2F/e/hx/q/hq").count('{"k":') == 10_001  # "k", then 10,000 levels
        # Only the message whose header equals the binding's 10,000-deep table is routed (a passive declare
        # on the same channel, after the publishes, counts the queue).
        publishes = publish_frames(1, b"hx", b"", longstr(shortstr(b"k") + b"F" + deep), b"deep")
        shallower = longstr(shortstr(b"k") + b"F" + _nested(9_999))
        publishes += publish_frames(1, b"hx", b"", shallower, b"shallower")
        [(kind, declare_ok)] = _send(broker, queue_declare(b"hq", longstr(b""), bits=0x01), first=publishes)
        assert (kind, declare_ok.message_count) == ("method", 1), declare_ok
    finally:
        broker.stop(signal.SIGTERM)
    broker = start_broker_process("--data-dir", str(data_dir))
    try:
        assert broker.ready["recovered"]["bindings"] == 1  # type: ignore[index]
        unbind = struct.pack("!IH", QUEUE_UNBIND, 0) + shortstr(b"hq") + shortstr(b"hx") + shortstr(b"")
        assert _names(_send(broker, unbind + arguments)) == ["Queue.UnbindOk"]
        assert _api(broker, "/api/bindings/%2F/e/hx/q/hq") == "[]"
    finally:
        broker.stop(signal.SIGTERM)
