"""amqpstorm.management (the management client of the AMQPStorm library) against WarrenMQ, and the same
script against the RabbitMQ oracle (compat, when installed) so every expectation is RabbitMQ's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from amqpstorm.management.api import ManagementApi
from amqpstorm.management.exception import ApiError

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.conftest import start_broker_process
from tests.management.rabbitmq_management_node import ManagementNode

_RABBIT = pytest.param(
    "rabbitmq",
    marks=[
        pytest.mark.compat,
        pytest.mark.slow,
        pytest.mark.skipif(
            not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"
        ),
    ],
)


@pytest.fixture(scope="module", params=["warrenmq", _RABBIT])
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagementApi]:
    if request.param == "warrenmq":
        broker = start_broker_process("--data-dir", "none")
        try:
            yield ManagementApi(f"http://127.0.0.1:{broker.management_port}", "guest", "guest")
        finally:
            broker.stop()
        return
    node = ManagementNode(Path(tmp_path_factory.mktemp("rabbitmq-amqpstorm")))
    node.start()
    try:
        yield ManagementApi(node.http_url, "guest", "guest")
    finally:
        node.stop()


def test_vhosts_users_and_permissions(api: ManagementApi) -> None:
    api.virtual_host.create("storm-v")
    assert api.virtual_host.get("storm-v")["name"] == "storm-v"
    assert "storm-v" in [v["name"] for v in api.virtual_host.list()]
    api.user.create("storm-u", "pw", tags="management")
    assert api.user.get("storm-u")["tags"] == ["management"]
    api.user.set_permission("storm-u", "storm-v", configure_regex="^s", write_regex=".*", read_regex=".*")
    assert api.user.get_permission("storm-u", "storm-v") == {
        "user": "storm-u",
        "vhost": "storm-v",
        "configure": "^s",
        "write": ".*",
        "read": ".*",
    }
    # (amqpstorm annotates these lists as dicts)
    by_user: Any = api.user.get_permissions("storm-u")
    by_vhost: Any = api.virtual_host.get_permissions("storm-v")
    assert [p["vhost"] for p in by_user] == ["storm-v"]
    assert sorted(p["user"] for p in by_vhost) == ["guest", "storm-u"]
    as_user = ManagementApi(api.http_client._base_url, "storm-u", "pw")
    assert as_user.whoami() == {"name": "storm-u", "tags": ["management"]}
    with pytest.raises(ApiError) as refused:
        as_user.user.list()  # administrator only
    assert refused.value.error_code == 401
    api.user.delete_permission("storm-u", "storm-v")
    api.user.delete("storm-u")
    with pytest.raises(ApiError) as gone:
        api.user.get("storm-u")
    assert gone.value.error_code == 404
    api.virtual_host.delete("storm-v")
    assert "storm-v" not in [v["name"] for v in api.virtual_host.list()]


def test_queues_exchanges_bindings_and_messages(api: ManagementApi) -> None:
    api.exchange.declare("storm-x", "topic", durable=True)
    api.exchange.declare("storm-y", "fanout")
    assert api.exchange.get("storm-x")["type"] == "topic"
    api.queue.declare("storm-q", durable=True, arguments={"x-max-length": 10})
    assert api.queue.get("storm-q")["arguments"] == {"x-max-length": 10}
    api.queue.bind("storm-q", "storm-x", "a.b")
    api.exchange.bind("storm-y", "storm-x", "e.k")
    assert [(b["destination"], b["routing_key"]) for b in api.exchange.bindings("storm-x")] == [
        ("storm-q", "a.b"),  # sorted by destination
        ("storm-y", "e.k"),
    ]
    assert api.basic.publish("hello", "a.b", exchange="storm-x") == {"routed": True}
    assert api.basic.publish("lost", "z.z", exchange="storm-x") == {"routed": False}
    got: Any = api.basic.get("storm-q", requeue=True, to_dict=True)
    [message] = got
    assert (message["payload"], message["routing_key"], message["message_count"]) == ("hello", "a.b", 0)
    decoded: Any = api.basic.get("storm-q", requeue=True)
    assert decoded[0].body == "hello"
    api.queue.purge("storm-q")
    assert api.basic.get("storm-q") == []
    api.queue.unbind("storm-q", "storm-x", "a.b")
    api.exchange.unbind("storm-y", "storm-x", "e.k")
    assert [b["source"] for b in api.queue.bindings("storm-q")] == [""]
    assert api.exchange.bindings("storm-x") == []
    api.queue.delete("storm-q")
    for name in ("storm-x", "storm-y"):
        api.exchange.delete(name)
    assert "storm-q" not in [q["name"] for q in api.queue.list()]
    with pytest.raises(ApiError) as missing:
        api.queue.get("storm-q")
    assert missing.value.error_code == 404


def test_node_overview_and_health(api: ManagementApi) -> None:
    assert api.aliveness_test("/") == {"status": "ok"}
    assert api.whoami() == {"name": "guest", "tags": ["administrator"]}
    overview = api.overview()
    node = overview["node"]
    assert api.nodes()[0]["name"] == node
    assert api.node(node)["running"] is True
    assert api.cluster_name()["name"] == overview["cluster_name"]
    assert api.healthchecks.get() == {"status": "ok"}
    assert api.connection.list() == []
    assert api.channel.list() == []
