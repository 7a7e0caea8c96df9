"""Real management clients against a `warrenmq serve` process: the official rabbitmqadmin (from the Debian
rabbitmq-server package, a test tool only) and pyrabbit2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
from pyrabbit2.api import Client

from tests.conftest import BrokerProcess, start_broker_process

RABBITMQADMIN = shutil.which("rabbitmqadmin")


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    process = start_broker_process("--data-dir", "none")
    yield process
    process.stop()


def admin(broker: BrokerProcess, *args: str) -> str:
    assert RABBITMQADMIN is not None
    result = subprocess.run(
        [sys.executable, RABBITMQADMIN, "-H", "127.0.0.1", "-P", str(broker.management_port), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


@pytest.mark.skipif(RABBITMQADMIN is None, reason="rabbitmqadmin (Debian rabbitmq-server) not installed")
def test_rabbitmqadmin_everyday_commands(broker: BrokerProcess, unique: str) -> None:
    vhost, user, queue, exchange = f"{unique}-v", f"{unique}-u", f"{unique}-q", f"{unique}-x"
    assert "vhost declared" in admin(broker, "declare", "vhost", f"name={vhost}")
    assert "user declared" in admin(
        broker, "declare", "user", f"name={user}", "password=p", "tags=management"
    )
    admin(
        broker,
        "declare",
        "permission",
        f"vhost={vhost}",
        f"user={user}",
        "configure=.*",
        "write=.*",
        "read=.*",
    )
    admin(broker, "-V", vhost, "declare", "queue", f"name={queue}", "durable=false")
    admin(broker, "-V", vhost, "declare", "exchange", f"name={exchange}", "type=topic")
    admin(
        broker,
        "-V",
        vhost,
        "declare",
        "binding",
        f"source={exchange}",
        f"destination={queue}",
        "routing_key=a.#",
    )
    assert "Message published" in admin(
        broker, "-V", vhost, "publish", f"exchange={exchange}", "routing_key=a.b", "payload=hello"
    )
    queues = json.loads(admin(broker, "-V", vhost, "-f", "raw_json", "list", "queues"))
    assert [(q["name"], q["messages"]) for q in queues] == [(queue, 1)]
    got = json.loads(
        admin(broker, "-V", vhost, "-f", "raw_json", "get", f"queue={queue}", "ackmode=ack_requeue_false")
    )
    assert [(m["payload"], m["routing_key"]) for m in got] == [("hello", "a.b")]
    bindings = json.loads(admin(broker, "-V", vhost, "-f", "raw_json", "list", "bindings"))
    key = next(b["properties_key"] for b in bindings if b["source"] == exchange)
    admin(
        broker,
        "-V",
        vhost,
        "delete",
        "binding",
        f"source={exchange}",
        "destination_type=queue",
        f"destination={queue}",
        f"properties_key={key}",
    )
    assert [
        b["source"] for b in json.loads(admin(broker, "-V", vhost, "-f", "raw_json", "list", "bindings"))
    ] == [""]
    admin(broker, "-V", vhost, "purge", "queue", f"name={queue}")
    for kind, name in (("queue", queue), ("exchange", exchange)):
        admin(broker, "-V", vhost, "delete", kind, f"name={name}")
    users = json.loads(admin(broker, "-f", "raw_json", "list", "users"))
    assert {(u["name"], u["tags"][0]) for u in users} >= {(user, "management"), ("guest", "administrator")}
    overview = json.loads(admin(broker, "-f", "raw_json", "show", "overview"))
    assert overview[0]["object_totals"]["queues"] >= 0
    assert json.loads(admin(broker, "-f", "raw_json", "list", "nodes"))[0]["running"] is True
    admin(broker, "delete", "permission", f"vhost={vhost}", f"user={user}")
    admin(broker, "delete", "user", f"name={user}")
    admin(broker, "delete", "vhost", f"name={vhost}")
    assert vhost not in [v["name"] for v in json.loads(admin(broker, "-f", "raw_json", "list", "vhosts"))]


def test_rabbitmqadmin_export_then_import(broker: BrokerProcess, tmp_path: object, unique: str) -> None:
    if RABBITMQADMIN is None:
        pytest.skip("rabbitmqadmin (Debian rabbitmq-server) not installed")
    path = f"{tmp_path}/defs.json"
    admin(broker, "declare", "queue", f"name={unique}-exported", "durable=true")
    admin(broker, "export", path)
    admin(broker, "delete", "queue", f"name={unique}-exported")
    admin(broker, "import", path)
    names = [q["name"] for q in json.loads(admin(broker, "-f", "raw_json", "list", "queues"))]
    assert f"{unique}-exported" in names


def test_pyrabbit2_round_trip(broker: BrokerProcess, unique: str) -> None:
    client = Client(f"127.0.0.1:{broker.management_port}", "guest", "guest")
    vhost, user = f"{unique}-pv", f"{unique}-pu"
    assert client.is_alive()
    assert client.get_whoami() == {"name": "guest", "tags": ["administrator"]}
    client.create_vhost(vhost)
    client.create_user(user, "pw", tags="management")
    client.set_vhost_permissions(vhost, user, ".*", ".*", ".*")
    assert client.get_user_permissions(user) == [
        {"configure": ".*", "read": ".*", "user": user, "vhost": vhost, "write": ".*"}
    ]
    client.create_exchange(vhost, "px", "topic")
    client.create_queue(vhost, "pq")
    client.create_binding(vhost, "px", "pq", "a.#")
    assert client.publish(vhost, "px", "a.b", "hello") is True
    assert client.get_queue_depth(vhost, "pq") == 1
    [message] = client.get_messages(vhost, "pq", count=1, requeue=True)
    assert (message["payload"], message["exchange"]) == ("hello", "px")
    client.purge_queue(vhost, "pq")
    client.delete_binding(vhost, "px", "pq", "a.%23")
    assert [b["source"] for b in client.get_queue_bindings(vhost, "pq")] == [""]
    client.delete_queue(vhost, "pq")
    client.delete_exchange(vhost, "px")
    client.delete_user(user)
    client.delete_vhost(vhost)
    assert vhost not in client.get_vhost_names()
