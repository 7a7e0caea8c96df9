"""Differential: every object nested in the management API's answers about connections, channels, consumers
and queues (``consumer_details[].channel_details``, ``connection_details``, ``owner_pid_details``,
``exclusive_consumer_details``, ``queue``, ...) is there with RabbitMQ's keys, against a private RabbitMQ
node holding the same AMQP state: one named connection, an exclusive queue with an exclusive consumer, a
shared queue with two consumers on another channel, unacknowledged deliveries. The consumers'
channel_details carry the values RabbitMQ gives them (its channel's name, number, user, peer)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pika
import pytest
import requests

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.management.http_differential import GUEST, Pair, nested_differences, start_pair

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]

# Erlang internals WarrenMQ has no equivalent of: garbage_collection holds the VM's per-process GC settings
# (min_heap_size, fullsweep_after, ...; WarrenMQ answers {}), backing_queue_status rabbit_variable_queue's
# own state (3.10's q1..q4 and delta segments; WarrenMQ answers mode, len and version), a listener's
# socket_opts the gen_tcp and cowboy options (linger, exit_on_close, sendfile). cluster_state is keyed by
# node name, which differs between the two brokers by construction. global_parameters[] is RabbitMQ's
# internal_cluster_id (a random id it generates at first boot), which WarrenMQ does not generate.
_SKIPPED = (
    "garbage_collection",
    "backing_queue_status",
    "cluster_state",
    "listeners[].socket_opts",
    "global_parameters[]",
)
NOT_COMPARED = frozenset(f"{prefix}{name}" for prefix in ("", "[].") for name in _SKIPPED)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    for pair in start_pair(Path(tmp_path_factory.mktemp("nested"))):
        connections = [_state(port) for port in pair.amqp_ports]
        try:
            _listed(pair.bases[0], "/api/consumers")
            yield pair
        finally:
            for connection in connections:
                connection.close()


def _state(port: int) -> pika.BlockingConnection:
    parameters = pika.ConnectionParameters(
        "127.0.0.1", port, client_properties={"connection_name": "nested-objects"}
    )
    connection = pika.BlockingConnection(parameters)
    first = connection.channel()
    first.queue_declare("nested-excl", exclusive=True)
    first.basic_consume("nested-excl", lambda *_: None, exclusive=True, consumer_tag="excl-tag")
    second = connection.channel()
    second.basic_qos(prefetch_count=5)
    second.queue_declare("nested-shared")
    for tag in ("shared-a", "shared-b"):
        second.basic_consume("nested-shared", lambda *_: None, consumer_tag=tag)
    for _ in range(3):
        second.basic_publish("", "nested-shared", b"m")
    connection.process_data_events(0.2)
    return connection


def _get(base: str, path: str) -> Any:
    response = requests.get(base + path, auth=GUEST, timeout=10)
    assert response.status_code == 200, (path, response.status_code, response.text[:200])
    return response.json()


def _listed(base: str, path: str) -> Any:
    """RabbitMQ's statistics reach its API at the next collection (5 s): wait until the list is filled."""
    deadline = time.monotonic() + 30
    while True:
        body = _get(base, path)
        if body or time.monotonic() > deadline:
            return body
        time.sleep(0.5)


def _paths(base: str) -> list[str]:
    connection = _listed(base, "/api/connections")[0]["name"]
    channels = sorted(channel["name"] for channel in _listed(base, "/api/channels"))
    return [
        "/api/queues/%2F/nested-excl",
        "/api/queues/%2F/nested-shared",
        "/api/queues",
        "/api/queues/%2F",
        "/api/consumers",
        "/api/consumers/%2F",
        "/api/connections",
        f"/api/connections/{quote(connection, safe='')}",
        f"/api/connections/{quote(connection, safe='')}/channels",
        "/api/channels",
        *(f"/api/channels/{quote(name, safe='')}" for name in channels),
        "/api/vhosts/%2F/channels",
        "/api/overview",
        "/api/nodes",
        "/api/exchanges",
        "/api/exchanges/%2F/amq.direct",
        "/api/bindings",
        "/api/vhosts",
        "/api/vhosts/%2F",
        "/api/users",
        "/api/definitions",
    ]


def test_every_nested_object_has_rabbitmqs_keys(pair: Pair) -> None:
    rabbit, warren = pair.bases
    found = []
    for theirs, ours in zip(_paths(rabbit), _paths(warren), strict=True):
        found += nested_differences(ours, _get(rabbit, theirs), _get(warren, ours), NOT_COMPARED)
    assert found == [], "\n".join(found)


def _channel_details(base: str) -> list[tuple[str, dict[str, Any]]]:
    details = _get(base, "/api/queues/%2F/nested-shared")["consumer_details"]
    return sorted((item["consumer_tag"], item["channel_details"]) for item in details)


def test_consumer_details_name_the_consumers_channel(pair: Pair) -> None:
    rabbit, warren = pair.bases
    for base, node in ((rabbit, pair.node.node_name), (warren, None)):
        connection_name = _listed(base, "/api/connections")[0]["name"]
        details = _channel_details(base)
        assert [tag for tag, _ in details] == ["shared-a", "shared-b"], base
        for _, channel in details:
            assert channel["connection_name"] == connection_name
            assert channel["name"] == f"{connection_name} (2)"
            assert (channel["number"], channel["user"], channel["peer_host"]) == (2, "guest", "127.0.0.1")
            assert channel["peer_port"] == int(connection_name.split(":")[1].split(" ")[0])
            assert node is None or channel["node"] == node
