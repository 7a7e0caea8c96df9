"""Policies and limits on a running `warrenmq serve` with real clients: pika sees a policy change alter a
running queue at once (max-length drops the head, message-ttl, dead-lettering), limits refuse connections,
channels and queues with RabbitMQ's codes and texts, rabbitmqadmin lists and declares policies, and
policies, limits and parameters survive kill -9."""

from __future__ import annotations

import base64
import json
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.conftest import BrokerProcess, start_broker_process
from tests.management.test_tools import RABBITMQADMIN, admin


@pytest.fixture
def broker() -> Iterator[BrokerProcess]:
    process = start_broker_process("--data-dir", "none")
    yield process
    process.stop()


def http(broker: BrokerProcess, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{broker.management_port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            "authorization": "Basic " + base64.b64encode(b"guest:guest").decode(),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        return error.code, json.loads(raw) if raw else None


def connect(broker: BrokerProcess) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(broker.url + "?socket_timeout=5"))


def count(channel: Any, queue: str) -> int:
    return int(channel.queue_declare(queue, passive=True).method.message_count)


def test_a_policy_change_alters_a_running_queue_at_once(broker: BrokerProcess) -> None:
    connection = connect(broker)
    channel = connection.channel()
    channel.queue_declare("live")
    for i in range(5):
        channel.basic_publish("", "live", b"m%d" % i)
    assert (
        http(broker, "PUT", "/api/policies/%2F/cap", {"pattern": "^live$", "definition": {"max-length": 2}})[
            0
        ]
        == 201
    )
    assert count(channel, "live") == 2
    assert channel.basic_get("live", auto_ack=True)[2] == b"m3"  # drop-head: the oldest went
    assert http(broker, "DELETE", "/api/policies/%2F/cap")[0] == 204
    for i in range(4):
        channel.basic_publish("", "live", b"n%d" % i)
    assert count(channel, "live") == 5  # no limit any more
    connection.close()


def test_message_ttl_and_dead_lettering_come_from_a_policy(broker: BrokerProcess) -> None:
    connection = connect(broker)
    channel = connection.channel()
    channel.exchange_declare("dlx", "fanout")
    channel.queue_declare("dead")
    channel.queue_bind("dead", "dlx")
    channel.queue_declare("work")
    channel.basic_publish("", "work", b"before")
    policy = {
        "pattern": "^work$",
        "definition": {"message-ttl": 0, "dead-letter-exchange": "dlx"},
        "apply-to": "queues",
    }
    assert http(broker, "PUT", "/api/policies/%2F/ttl", policy)[0] == 201
    # Queued messages keep their (absent) expiry, as in RabbitMQ; a new one waits behind the head and
    # expires into the DLX once it reaches the head (RabbitMQ 3.10.8 does the same).
    assert count(channel, "work") == 1
    channel.basic_publish("", "work", b"after")
    assert count(channel, "work") == 2
    assert channel.basic_get("work", auto_ack=True)[2] == b"before"
    _method, properties, body = channel.basic_get("dead", auto_ack=True)
    assert body == b"after"
    assert properties.headers["x-death"][0]["reason"] == "expired"
    # Without a DLX, a TTL-0 queue discards what it cannot deliver at once (deliver_or_enqueue).
    channel.queue_declare("plain")
    channel.basic_publish("", "plain", b"old")
    http(broker, "PUT", "/api/policies/%2F/zero", {"pattern": "^plain$", "definition": {"message-ttl": 0}})
    channel.basic_publish("", "plain", b"new")
    assert count(channel, "plain") == 1
    status, queue = http(broker, "GET", "/api/queues/%2F/work")
    assert (status, queue["policy"], queue["effective_policy_definition"]) == (
        200,
        "ttl",
        {"dead-letter-exchange": "dlx", "message-ttl": 0},
    )
    connection.close()


def test_vhost_and_user_limits_refuse_with_rabbitmqs_texts(broker: BrokerProcess) -> None:
    first = connect(broker)
    assert http(broker, "PUT", "/api/vhost-limits/%2F/max-connections", {"value": 1})[0] == 204
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as refused:
        connect(broker)
    assert "530" in str(refused.value)
    assert (
        "NOT_ALLOWED - access to vhost '/' refused for user 'guest': connection limit (1) is reached"
        in str(refused.value)
    )
    http(broker, "DELETE", "/api/vhost-limits/%2F/max-connections")
    http(broker, "PUT", "/api/user-limits/guest/max-connections", {"value": 1})
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as refused:
        connect(broker)
    assert "connection refused for user 'guest': user connection limit (1) is reached" in str(refused.value)
    http(broker, "DELETE", "/api/user-limits/guest/max-connections")
    http(broker, "PUT", "/api/user-limits/guest/max-channels", {"value": 1})
    channel = first.channel()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        first.channel()
    assert (closed.value.reply_code, closed.value.reply_text) == (
        530,
        "NOT_ALLOWED - number of channels opened for user 'guest' has reached the maximum allowed user limit"
        " of (1)",
    )
    assert channel is not None
    http(broker, "DELETE", "/api/user-limits/guest/max-channels")


def test_the_queue_limit_refuses_new_queues_only(broker: BrokerProcess) -> None:
    connection = connect(broker)
    channel = connection.channel()
    channel.queue_declare("one")
    assert http(broker, "PUT", "/api/vhost-limits/%2F/max-queues", {"value": 1})[0] == 204
    channel.queue_declare("one")  # redeclaring an existing queue is fine
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        channel.queue_declare("two")
    assert (refused.value.reply_code, refused.value.reply_text) == (
        406,
        "PRECONDITION_FAILED - cannot declare queue 'two': queue limit in vhost '/' (1) is reached",
    )
    assert http(broker, "PUT", "/api/queues/%2F/three", {}) == (
        400,
        {
            "error": "bad_request",
            "reason": "cannot declare queue 'three': queue limit in vhost '/' (1) is reached",
        },
    )
    connection.close()


@pytest.mark.skipif(RABBITMQADMIN is None, reason="rabbitmqadmin (Debian rabbitmq-server) not installed")
def test_rabbitmqadmin_declares_lists_and_deletes_policies(broker: BrokerProcess) -> None:
    admin(
        broker,
        "declare",
        "policy",
        "name=adm",
        "pattern=^a",
        'definition={"max-length": 3}',
        "apply-to=queues",
        "priority=2",
    )
    listed = json.loads(admin(broker, "-f", "raw_json", "list", "policies"))
    assert [(p["name"], p["definition"], p["priority"]) for p in listed] == [("adm", {"max-length": 3}, 2)]
    admin(broker, "declare", "operator_policy", "name=op", "pattern=^a", 'definition={"max-length": 2}')
    assert "op" in admin(broker, "list", "operator_policies")
    admin(broker, "delete", "policy", "name=adm")
    assert json.loads(admin(broker, "-f", "raw_json", "list", "policies")) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_policies_limits_and_parameters_survive_kill_9(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    data_dir = str(tmp_path / "data")
    store = ("--store", request.getfixturevalue("postgres_dsn")) if kind == "postgresql" else ()
    broker = start_broker_process("--data-dir", data_dir, *store)
    try:
        http(broker, "PUT", "/api/policies/%2F/cap", {"pattern": "^kept$", "definition": {"max-length": 1}})
        http(
            broker,
            "PUT",
            "/api/operator-policies/%2F/op",
            {"pattern": "^kept$", "definition": {"expires": 60000}},
        )
        http(broker, "PUT", "/api/vhost-limits/%2F/max-queues", {"value": 7})
        http(broker, "PUT", "/api/user-limits/guest/max-channels", {"value": 9})
        http(broker, "PUT", "/api/global-parameters/kept", {"value": {"a": 1}})
        connection = connect(broker)
        channel = connection.channel()
        channel.queue_declare("kept", durable=True)
        # A confirmed persistent message: its confirm follows the commit of its batch and of every earlier
        # one (declare-ok does not wait for the commit; a PostgreSQL commit takes long enough to show it).
        channel.confirm_delivery()
        channel.basic_publish("", "kept", b"m", pika.BasicProperties(delivery_mode=2))
        connection.close()
    finally:
        broker.stop(signal.SIGKILL)
    broker = start_broker_process("--data-dir", data_dir, *store)
    try:
        assert [p["name"] for p in http(broker, "GET", "/api/policies")[1]] == ["cap"]
        assert [p["name"] for p in http(broker, "GET", "/api/operator-policies")[1]] == ["op"]
        assert http(broker, "GET", "/api/vhost-limits/%2F")[1] == [{"vhost": "/", "value": {"max-queues": 7}}]
        assert http(broker, "GET", "/api/users/guest")[1]["limits"] == {"max-channels": 9}
        assert http(broker, "GET", "/api/global-parameters/kept")[1] == {"value": {"a": 1}, "name": "kept"}
        queue = http(broker, "GET", "/api/queues/%2F/kept")[1]
        assert (queue["policy"], queue["operator_policy"]) == ("cap", "op")
        assert queue["effective_policy_definition"] == {"expires": 60000, "max-length": 1}
    finally:
        broker.stop()


# The runtime-parameter sections as RabbitMQ 3.10.8 exports them (GET /api/definitions on the oracle node).
RABBITMQ_EXPORT: dict[str, Any] = {
    "rabbit_version": "3.10.8",
    "users": [
        {
            "name": "guest",
            "password_hash": "IFq/pM0ehDkedEycaFH6QomasqxI++TZSbTYPFlAvM5Ha250",
            "hashing_algorithm": "rabbit_password_hashing_sha256",
            "tags": ["administrator"],
            "limits": {"max-channels": 50},
        }
    ],
    "vhosts": [{"name": "/"}],
    "permissions": [{"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"}],
    "parameters": [
        {
            "value": {
                "pattern": "^t",
                "definition": {"max-length": 6, "message-ttl": 1000},
                "priority": 0,
                "apply-to": "queues",
            },
            "vhost": "/",
            "component": "operator_policy",
            "name": "op1",
        },
        {"value": {"max-queues": 2}, "vhost": "/", "component": "vhost-limits", "name": "limits"},
    ],
    "global_parameters": [
        {"name": "cluster_name", "value": "abc"},
        {"name": "internal_cluster_id", "value": "rabbitmq-cluster-id-A22Rev7gspmCI-0EgRx62A"},
    ],
    "policies": [
        {
            "vhost": "/",
            "name": "pa",
            "pattern": "^t",
            "apply-to": "all",
            "definition": {"max-length": 7},
            "priority": 1,
        }
    ],
    "queues": [{"name": "tq", "vhost": "/", "durable": True, "auto_delete": False, "arguments": {}}],
    "exchanges": [],
    "bindings": [],
}


def test_a_rabbitmq_export_with_policies_and_limits_applies_at_boot(tmp_path: Path) -> None:
    path = tmp_path / "definitions.json"
    path.write_text(json.dumps(RABBITMQ_EXPORT))
    broker = start_broker_process("--definitions", str(path), "--data-dir", "none")
    try:
        queue = http(broker, "GET", "/api/queues/%2F/tq")[1]
        assert (queue["policy"], queue["operator_policy"]) == ("pa", "op1")
        assert queue["effective_policy_definition"] == {"max-length": 6, "message-ttl": 1000}
        assert http(broker, "GET", "/api/users/guest")[1]["limits"] == {"max-channels": 50}
        assert http(broker, "GET", "/api/cluster-name")[1] == {"name": "abc"}
        exported = http(broker, "GET", "/api/definitions")[1]
        assert exported["policies"] == RABBITMQ_EXPORT["policies"]
        assert sorted(exported["parameters"], key=lambda p: p["component"]) == sorted(
            RABBITMQ_EXPORT["parameters"], key=lambda p: p["component"]
        )
        connection = connect(broker)
        channel = connection.channel()
        channel.queue_declare("second")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            channel.queue_declare("third")
        assert refused.value.reply_code == 406
        connection.close()
    finally:
        broker.stop()
