"""Users, tags, password hashes, permissions, topic permissions and vhost metadata live in the store: they
survive a clean restart and kill -9, and a deleted user stays deleted; imported definitions export the same.
Driven through the management API
(as rabbitmqadmin or a provisioning tool would) and checked over HTTP and AMQP after the restart."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.durability.conftest import DurableBroker

GUEST = "Basic " + base64.b64encode(b"guest:guest").decode()


def _http(durable: DurableBroker, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    assert durable.process is not None
    assert durable.process.management_port
    request = urllib.request.Request(
        f"http://127.0.0.1:{durable.process.management_port}{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": GUEST, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, None


def _committed(durable: DurableBroker) -> None:
    """Batches commit in order: once a persistent publish is confirmed, every earlier change is on disk."""
    assert durable.process is not None
    connection = pika.BlockingConnection(pika.URLParameters(durable.process.url))
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare("barrier", durable=True)
    channel.basic_publish("", "barrier", b"b", pika.BasicProperties(delivery_mode=2))
    connection.close()


@pytest.mark.parametrize("crash", [False, True], ids=["restart", "kill-9"])
def test_users_permissions_and_vhost_metadata_survive(durable: DurableBroker, crash: bool) -> None:
    durable.stop()
    durable.start("--management-port", "0")
    assert _http(durable, "PUT", "/api/users/alice", {"password": "pw", "tags": "management"})[0] == 201
    perms = {"configure": "^a-", "write": ".*", "read": ".*"}
    assert _http(durable, "PUT", "/api/permissions/%2F/alice", perms)[0] == 201
    topic = {"exchange": "amq.topic", "write": "^x", "read": ".*"}
    assert _http(durable, "PUT", "/api/topic-permissions/%2F/alice", topic)[0] == 201
    meta = {"description": "tenant", "tags": "t1,t2", "default_queue_type": "quorum"}
    assert _http(durable, "PUT", "/api/vhosts/v2", meta)[0] == 201
    assert _http(durable, "PUT", "/api/users/bob", {"password": "pw", "tags": ""})[0] == 201
    assert _http(durable, "PUT", "/api/permissions/%2F/bob", perms)[0] == 201
    assert _http(durable, "DELETE", "/api/users/bob")[0] == 204
    policy = {"pattern": "^a-", "definition": {"max-length": 5}, "apply-to": "queues", "priority": 2}
    assert _http(durable, "PUT", "/api/policies/%2F/cap", policy)[0] == 201
    assert _http(durable, "PUT", "/api/operator-policies/%2F/op", {**policy, "priority": 0})[0] == 201
    assert _http(durable, "PUT", "/api/vhost-limits/v2/max-queues", {"value": 7})[0] == 204
    assert _http(durable, "PUT", "/api/user-limits/alice/max-channels", {"value": 3})[0] == 204
    # A binding made over HTTP with arguments: JSON integers are AMQP longs, and stay so in the store.
    assert _http(durable, "PUT", "/api/exchanges/%2F/kept-x", {"type": "headers", "durable": True})[0] == 201
    assert _http(durable, "PUT", "/api/queues/%2F/kept-q", {"durable": True})[0] == 201
    binding = {"arguments": {"x-match": "all", "n": 1}}
    assert _http(durable, "POST", "/api/bindings/%2F/e/kept-x/q/kept-q", binding)[0] == 201
    _, before = _http(durable, "GET", "/api/bindings/%2F/e/kept-x/q/kept-q")
    _committed(durable)

    durable.kill() if crash else durable.stop()
    durable.start("--management-port", "0")

    status, alice = _http(durable, "GET", "/api/users/alice")
    assert (status, alice["tags"]) == (200, ["management"])
    status, stored = _http(durable, "GET", "/api/permissions/%2F/alice")
    assert status == 200
    assert {key: stored[key] for key in perms} == perms
    status, topics = _http(durable, "GET", "/api/topic-permissions/%2F/alice")
    assert status == 200
    assert [(t["exchange"], t["write"], t["read"]) for t in topics] == [("amq.topic", "^x", ".*")]
    status, vhost = _http(durable, "GET", "/api/vhosts/v2")
    assert status == 200
    assert (vhost["description"], vhost["tags"], vhost["default_queue_type"]) == (
        "tenant",
        ["t1", "t2"],
        "quorum",
    )
    assert _http(durable, "GET", "/api/users/bob")[0] == 404
    status, kept = _http(durable, "GET", "/api/policies/%2F/cap")
    assert (status, kept["definition"], kept["priority"]) == (200, {"max-length": 5}, 2)
    assert _http(durable, "GET", "/api/operator-policies/%2F/op")[0] == 200
    assert _http(durable, "GET", "/api/vhost-limits/v2")[1] == [{"vhost": "v2", "value": {"max-queues": 7}}]
    assert _http(durable, "GET", "/api/user-limits/alice")[1] == [
        {"user": "alice", "value": {"max-channels": 3}}
    ]
    assert _http(durable, "GET", "/api/bindings/%2F/e/kept-x/q/kept-q")[1] == before
    assert _http(durable, "GET", "/api/permissions/%2F/bob")[0] == 404
    # The stored hash logs alice in, and her stored permissions are enforced.
    assert durable.process is not None
    url = f"amqp://alice:pw@127.0.0.1:{durable.process.ready['amqp_port']}/"
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        connection.channel().queue_declare("a-q")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            connection.channel().queue_declare("b-q")
        assert (
            refused.value.reply_text
            == "ACCESS_REFUSED - access to queue 'b-q' in vhost '/' refused for user 'alice'"
        )
    finally:
        connection.close()
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        pika.BlockingConnection(
            pika.URLParameters(f"amqp://bob:pw@127.0.0.1:{durable.process.ready['amqp_port']}/")
        )


DEFINITIONS: dict[str, Any] = {
    "vhosts": [{"name": "/"}, {"name": "tenant", "description": "imported", "tags": ["t"]}],
    "users": [
        {
            "name": "carol",
            "password_hash": "IFq/pM0ehDkedEycaFH6QomasqxI++TZSbTYPFlAvM5Ha250",
            "hashing_algorithm": "rabbit_password_hashing_sha256",
            "tags": ["monitoring"],
        }
    ],
    "permissions": [{"user": "carol", "vhost": "tenant", "configure": "", "write": ".*", "read": ".*"}],
    "topic_permissions": [
        {"user": "carol", "vhost": "tenant", "exchange": "ev", "write": "^a", "read": ".*"}
    ],
    "policies": [
        {
            "vhost": "tenant",
            "name": "ttl",
            "pattern": "^q",
            "apply-to": "queues",
            "definition": {"message-ttl": 60000},
            "priority": 1,
        }
    ],
    "parameters": [
        {"vhost": "tenant", "component": "vhost-limits", "name": "limits", "value": {"max-queues": 9}}
    ],
    "exchanges": [
        {
            "name": "ev",
            "vhost": "tenant",
            "type": "topic",
            "durable": True,
            "auto_delete": False,
            "internal": False,
            "arguments": {"alternate-exchange": "ae"},
        }
    ],
    "queues": [
        {
            "name": "q1",
            "vhost": "tenant",
            "durable": True,
            "auto_delete": False,
            "arguments": {"x-max-length": 4},
        }
    ],
    "bindings": [
        {
            "source": "ev",
            "vhost": "tenant",
            "destination": "q1",
            "destination_type": "queue",
            "routing_key": "a.#",
            "arguments": {"n": 1},
        }
    ],
}
SECTIONS = ("permissions", "topic_permissions", "policies", "parameters", "exchanges", "queues", "bindings")


@pytest.mark.parametrize("crash", [False, True], ids=["restart", "kill-9"])
def test_imported_definitions_export_the_same_after_a_restart(durable: DurableBroker, crash: bool) -> None:
    durable.stop()
    durable.start("--management-port", "0")
    assert _http(durable, "POST", "/api/definitions", DEFINITIONS)[0] in (200, 201, 204)
    _committed(durable)
    _, before = _http(durable, "GET", "/api/definitions")

    durable.kill() if crash else durable.stop()
    durable.start("--management-port", "0")

    _, after = _http(durable, "GET", "/api/definitions")
    for section in SECTIONS:
        assert sorted(map(repr, after[section])) == sorted(map(repr, before[section])), section
    assert [u for u in after["users"] if u["name"] == "carol"] == [
        u for u in before["users"] if u["name"] == "carol"
    ]
    assert [v for v in after["vhosts"] if v["name"] == "tenant"] == [
        v for v in before["vhosts"] if v["name"] == "tenant"
    ]
    assert [q["name"] for q in after["queues"] if q["vhost"] == "tenant"] == ["q1"]  # the import took
