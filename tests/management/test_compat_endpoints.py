"""Differential: the endpoint families test_compat_http's scenario does not reach (per-vhost and per-user
listings, limits, policies, parameters, extensions, feature flags, auth, single nodes, connections and
channels by name, per-vhost definitions, the remaining health checks) against a private RabbitMQ node."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pika
import pika.exceptions
import pytest
import requests

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.management.http_differential import GUEST, Pair, Step, differences, key_set, start_pair

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]

V = "ep-v"
POLICY = {"pattern": "^ep", "definition": {"max-length": 5}, "apply-to": "queues", "priority": 1}
SETUP = [
    Step("PUT", f"/api/vhosts/{V}", {"description": "endpoints"}),
    Step("PUT", "/api/users/ep-u", {"password": "p", "tags": "management"}),
    Step("PUT", "/api/users/ep-none", {"password": "p", "tags": ""}),
    Step("PUT", f"/api/permissions/{V}/ep-u", {"configure": ".*", "write": ".*", "read": ".*"}),
    Step("PUT", f"/api/topic-permissions/{V}/ep-u", {"exchange": "amq.topic", "write": "^a", "read": ".*"}),
    Step("PUT", f"/api/queues/{V}/ep-q", {"durable": True}),
    Step("PUT", f"/api/exchanges/{V}/ep-x", {"type": "direct", "durable": True}),
    Step("POST", f"/api/bindings/{V}/e/ep-x/q/ep-q", {"routing_key": "k"}),
    Step("PUT", f"/api/policies/{V}/ep-p", POLICY),
    Step("PUT", f"/api/operator-policies/{V}/ep-op", {**POLICY, "definition": {"max-length": 9}}),
    Step("PUT", f"/api/vhost-limits/{V}/max-connections", {"value": 10}),
    Step("PUT", "/api/user-limits/ep-u/max-channels", {"value": 3}),
]
LISTINGS = [
    Step("GET", f"/api/vhosts/{V}/permissions", values=("*",)),
    Step("GET", f"/api/vhosts/{V}/topic-permissions", values=("*",)),
    Step("GET", "/api/users/ep-u/permissions", values=("*",)),
    Step("GET", "/api/users/ep-u/topic-permissions", values=("*",)),
    Step("GET", "/api/users/without-permissions"),  # (password hashes are salted at random)
    Step("GET", "/api/permissions", values=("*",)),
    Step("GET", "/api/topic-permissions", values=("*",)),
    Step("GET", "/api/policies", values=("*",)),
    Step("GET", f"/api/policies/{V}", values=("*",)),
    Step("GET", "/api/operator-policies", values=("*",)),
    Step("GET", "/api/vhost-limits", values=("*",)),
    Step("GET", f"/api/vhost-limits/{V}", values=("*",)),
    Step("GET", "/api/user-limits", values=("*",)),
    Step("GET", "/api/user-limits/ep-u", values=("*",)),
    Step("GET", "/api/parameters", values=("*",)),
    Step("GET", "/api/parameters/vhost-limits", values=("*",)),
    Step("GET", "/api/parameters/operator_policy", values=("*",)),
    Step("GET", "/api/parameters/federation-upstream", values=("*",)),
    Step("GET", "/api/all-configuration", values=("queues", "exchanges", "bindings", "policies")),
    Step("GET", "/api/global-parameters"),
    Step("GET", "/api/extensions", values=("*",)),
    Step("GET", "/api/feature-flags"),
    Step("GET", "/api/auth", values=("enable_uaa", "uaa_client_id", "uaa_location")),
    Step("GET", "/api/vhosts"),
    Step("GET", "/api/queues"),
    Step("GET", "/api/exchanges"),
    Step("GET", "/api/bindings"),
    Step("GET", f"/api/consumers/{V}", values=("*",)),
    Step("GET", f"/api/vhosts/{V}/connections", values=("*",)),
    Step("GET", f"/api/vhosts/{V}/channels", values=("*",)),
    Step("GET", "/api/connections/username/ep-u", values=("*",)),
    Step("GET", "/api/connections/nosuch", values=("*",)),
    Step("DELETE", "/api/connections/nosuch", values=("*",)),
    # (GET /api/connections/nosuch/channels crashes RabbitMQ 3.10.8 with a 500; WarrenMQ answers 404.)
    Step("GET", "/api/channels/nosuch", values=("*",)),
    # (3.13 strips "vhost" from a per-vhost export's policies and parameters too; 3.10 keeps it there.)
    Step("GET", f"/api/definitions/{V}", values=("queues", "exchanges", "bindings")),
    Step(
        "POST",
        f"/api/definitions/{V}",
        {"queues": [{"name": "ep-q2", "durable": True, "auto_delete": False}]},
    ),
    Step("GET", f"/api/queues/{V}/ep-q2", values=("name", "durable", "arguments")),
    Step("GET", "/api/health/checks/local-alarms", values=("*",)),
    Step("GET", "/api/health/checks/certificate-expiration/1/weeks", values=("*",)),
    Step("GET", "/api/health/checks/node-is-mirror-sync-critical", values=("*",)),
]


RO = ("ep-ro", "p")
FULL = ("ep-u", "p")
PUBLISH = {"routing_key": "k", "properties": {}, "payload": "m", "payload_encoding": "string"}
# authorize() behind HTTP for the rows test_compat_http does not reach, refused and allowed: a management
# user who may only read, then one with every permission; tags gate policies, limits and definitions.
ACCESS = [
    Step("PUT", "/api/users/ep-ro", {"password": "p", "tags": "management"}),
    Step("PUT", f"/api/permissions/{V}/ep-ro", {"configure": "^$", "write": "^$", "read": ".*"}),
    Step("DELETE", f"/api/exchanges/{V}/ep-x", user=RO, values=("*",)),
    Step("DELETE", f"/api/bindings/{V}/e/ep-x/q/ep-q/k", user=RO, values=("*",)),
    Step("POST", f"/api/bindings/{V}/e/ep-x/e/amq.direct", {"routing_key": "k"}, user=RO, values=("*",)),
    Step("PUT", f"/api/policies/{V}/ro-p", POLICY, user=RO, values=("*",)),
    Step("DELETE", f"/api/policies/{V}/ep-p", user=RO, values=("*",)),
    Step("PUT", f"/api/vhost-limits/{V}/max-queues", {"value": 1}, user=RO, values=("*",)),
    Step("GET", "/api/definitions", user=RO, values=("*",)),
    Step("GET", f"/api/vhosts/{V}", user=("ep-none", "p"), values=("*",)),
    Step("GET", f"/api/queues/{V}/ep-q/bindings", user=RO, values=("*",)),
    Step("POST", f"/api/exchanges/{V}/ep-x/publish", PUBLISH, user=FULL, values=("*",)),
    Step(
        "POST",
        f"/api/queues/{V}/ep-q/get",
        {"count": 1, "ackmode": "ack_requeue_false", "encoding": "auto"},
        user=RO,
        values=("*",),
    ),
    Step(
        "POST",
        f"/api/bindings/{V}/e/ep-x/e/amq.direct",
        {"routing_key": "k"},
        user=FULL,
        headers=("Location",),
    ),
    Step("DELETE", f"/api/bindings/{V}/e/ep-x/q/ep-q/k", user=FULL),
    Step("DELETE", f"/api/exchanges/{V}/ep-x", user=FULL),
    Step("GET", f"/api/exchanges/{V}/ep-x", values=("*",)),
]


LONG = "n" * 256
# Bad input, each followed by a read that shows nothing changed.
BAD_INPUT = [
    Step("PUT", f"/api/permissions/{V}/ep-u", {"configure": "(", "write": ".*", "read": ".*"}, values=("*",)),
    Step("GET", f"/api/permissions/{V}/ep-u", values=("*",)),
    Step(
        "PUT",
        f"/api/topic-permissions/{V}/ep-u",
        {"exchange": "amq.topic", "write": "[", "read": ".*"},
        values=("*",),
    ),
    Step("GET", f"/api/topic-permissions/{V}/ep-u", values=("*",)),
    Step("DELETE", f"/api/exchanges/{V}/amq.default", values=("*",)),
    Step("DELETE", f"/api/exchanges/{V}/amq.topic", values=("*",)),
    Step("GET", f"/api/exchanges/{V}/amq.topic", values=("name", "type")),
    Step("PUT", f"/api/exchanges/{V}/{LONG}", {"type": "direct"}, values=("*",)),
    Step("GET", f"/api/exchanges/{V}/{LONG}", values=("name",)),  # (accepted: only AMQP's shortstr limits it)
    Step("PUT", f"/api/vhosts/{LONG}", values=("*",)),
    Step("PUT", f"/api/users/{LONG}", {"password": "p", "tags": ""}, values=("*",)),
    Step("PUT", "/api/queues/no-vhost/q", {}, values=("*",)),
    Step("PUT", "/api/exchanges/no-vhost/x", {"type": "direct"}, values=("*",)),
    Step(
        "PUT",
        "/api/permissions/no-vhost/ep-u",
        {"configure": ".*", "write": ".*", "read": ".*"},
        values=("*",),
    ),
    Step("PUT", "/api/policies/no-vhost/p", POLICY, values=("*",)),
    Step("PUT", f"/api/queues/{V}/ep-unknown", {"durable": True, "bogus": 1}, values=("*",)),
    Step("GET", f"/api/queues/{V}/ep-unknown", values=("name", "durable", "arguments")),
    Step("PUT", "/api/users/ep-unknown", {"password": "p", "tags": "", "bogus": 1}, values=("*",)),
    Step("GET", "/api/users/ep-unknown", values=("name", "tags")),
    Step("PUT", f"/api/queues/{V}/ep-bad", raw=b'{"durable": tru', values=("*",)),
    Step("GET", f"/api/queues/{V}/ep-bad", values=("*",)),
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    yield from start_pair(tmp_path_factory.mktemp("rabbitmq-endpoints"))


def test_the_remaining_endpoint_families_answer_as_rabbitmqs(pair: Pair) -> None:
    found = differences(*pair.bases, [*SETUP, *LISTINGS])
    assert found == [], "\n".join(found)


def test_http_access_control_refuses_and_allows_as_rabbitmq(pair: Pair) -> None:
    found = differences(*pair.bases, [*SETUP, *ACCESS])
    assert found == [], "\n".join(found)


def test_bad_input_gets_rabbitmqs_error_and_changes_nothing(pair: Pair) -> None:
    found = differences(*pair.bases, [*SETUP, *BAD_INPUT])
    assert found == [], "\n".join(found)


def test_one_node_carries_rabbitmqs_keys(pair: Pair) -> None:
    nodes = []
    for base in pair.bases:
        name = requests.get(f"{base}/api/overview", auth=GUEST, timeout=10).json()["node"]
        nodes.append(requests.get(f"{base}/api/nodes/{name}", auth=GUEST, timeout=10).json())
    rabbit, warren = nodes
    assert key_set(rabbit) - key_set(warren) == set()
    assert (warren["running"], warren["type"]) == (rabbit["running"], rabbit["type"])


def _named(base: str, path: str) -> dict[str, Any]:
    """RabbitMQ shows a connection or channel once its stats collector has seen it."""
    deadline = time.monotonic() + 30
    while True:
        rows = requests.get(base + path, auth=GUEST, timeout=10).json()
        if rows or time.monotonic() > deadline:
            assert rows, path
            return dict(rows[0])
        time.sleep(0.2)


def test_a_connection_and_its_channel_by_name_then_closed_with_a_reason(pair: Pair) -> None:
    seen = []
    for base, port in zip(pair.bases, pair.amqp_ports, strict=True):
        credentials = pika.PlainCredentials("guest", "guest")
        connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port, "/", credentials))
        connection.channel()
        name = _named(base, "/api/connections")["name"]
        quoted = quote(name, safe="")
        one = requests.get(f"{base}/api/connections/{quoted}", auth=GUEST, timeout=10).json()
        channels = requests.get(f"{base}/api/connections/{quoted}/channels", auth=GUEST, timeout=10).json()
        channel_name = _named(base, "/api/channels")["name"]
        channel = requests.get(
            f"{base}/api/channels/{quote(channel_name, safe='')}", auth=GUEST, timeout=10
        ).json()
        closed = requests.delete(
            f"{base}/api/connections/{quoted}", auth=GUEST, headers={"X-Reason": "bye"}, timeout=10
        )
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as error:
            connection.process_data_events(10)
        seen.append(
            (one, channels, channel, closed.status_code, error.value.reply_code, error.value.reply_text)
        )
    rabbit, warren = seen
    assert key_set(rabbit[0]) - key_set(warren[0]) == set()
    assert [(c["number"], c["user"]) for c in rabbit[1]] == [(c["number"], c["user"]) for c in warren[1]]
    assert key_set(rabbit[2]) - key_set(warren[2]) == set()
    assert rabbit[3:] == warren[3:] == (204, 320, "CONNECTION_FORCED - bye")
