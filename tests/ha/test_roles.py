"""Two WarrenMQ processes on one PostgreSQL store: one active, one standby, and what each shows (health
checks, readiness, /api/nodes, /api/overview, Prometheus, no AMQP listener on the standby); a clean stop
of the active node hands over at once (it resigns its lease)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from broker.management.api.app import STANDBY_REFUSES
from tests.ha.nodes import ROOT, HANode


@pytest.fixture
def pair(postgres_dsn: str, tmp_path: Path) -> Iterator[tuple[HANode, HANode]]:
    first, second = (HANode(name, postgres_dsn, tmp_path, lease_s=30.0) for name in ("first", "second"))
    try:
        yield first, second
    finally:
        first.stop()
        second.stop()


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_one_node_is_active_the_other_standby_and_both_say_so(pair: tuple[HANode, HANode]) -> None:
    first, second = pair
    first.start()
    first.wait_event("standby")
    ready = first.wait_event("ready")
    assert (ready["role"], ready["epoch"]) == ("active", 1)
    second.start()
    standby = second.wait_event("standby")
    assert "amqp_port" not in standby
    assert _refused(second.amqp_port)  # a standby opens no AMQP listener
    # Every health check, and RabbitMQ 4.1's readiness check, answers 503 on the standby only.
    for path in ("/api/health/checks/is-in-service", "/api/health/checks/alarms", "/api/aliveness-test/%2F"):
        status, body = second.http(path)
        assert (status, body["status"]) == (503, "failed"), path
        assert "standby" in body["reason"]
        assert first.http(path)[0] == 200, path
    # A standby changes nothing (the change would wait for its election, then meet the recovered store).
    status, body = second.http("/api/queues/%2F/made-on-the-standby", method="PUT", body={"durable": True})
    assert (status, body["reason"]) == (503, STANDBY_REFUSES)
    assert first.http("/api/queues/%2F/made-on-the-active-node", method="PUT", body={})[0] == 201
    assert first.http("/api/nodes")[1][0]["ha_role"] == "active"
    assert second.http("/api/nodes")[1][0]["ha_role"] == "standby"
    overview = first.http("/api/overview")[1]
    assert (overview["ha_role"], overview["ha_epoch"]) == ("active", 1)
    assert second.http("/api/overview")[1]["ha_epoch"] is None
    assert "standby" in second.log()
    assert "active" in first.log()


def test_prometheus_exports_the_role_and_a_stopped_active_node_hands_over_at_once(
    pair: tuple[HANode, HANode],
) -> None:
    first, second = pair
    first.start()
    prometheus_port = first.wait_event("ready")["prometheus_port"]
    second.start()
    second_prometheus = second.wait_event("standby")["prometheus_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{prometheus_port}/metrics") as response:
        metrics = response.read().decode()
    assert 'warrenmq_ha_role{role="active"} 1.0' in metrics
    assert "warrenmq_ha_epoch 1.0" in metrics
    assert "warrenmq_store_commit_seconds_count" in metrics
    with urllib.request.urlopen(f"http://127.0.0.1:{second_prometheus}/metrics") as response:
        assert 'warrenmq_ha_role{role="standby"} 1.0' in response.read().decode()

    connection = pika.BlockingConnection(first.parameters())
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare("kept", durable=True)
    channel.basic_publish("", "kept", b"persistent", pika.BasicProperties(delivery_mode=2))
    connection.close()
    first.stop()  # SIGTERM: the last commit, then the lease is resigned
    assert first.wait() == 0
    # With a 30 s lease, only the resignation lets the standby in this soon.
    ready = second.wait_event("ready", timeout_s=15)
    assert ready["epoch"] == 2
    assert second.http("/api/nodes")[1][0]["ha_failovers"] == 1
    connection = pika.BlockingConnection(second.parameters())
    channel = connection.channel()
    assert channel.queue_declare("kept", passive=True).method.message_count == 1
    # A queue declared on the new active node gets a store id of its own, though this node was built
    # (as a standby) before the first one declared "kept".
    channel.confirm_delivery()
    channel.queue_declare("fresh", durable=True)
    channel.basic_publish("", "fresh", b"on the second node", pika.BasicProperties(delivery_mode=2))
    connection.close()
    second.stop()
    first.start()
    assert first.wait_event("ready", timeout_s=30)["epoch"] == 3
    connection = pika.BlockingConnection(first.parameters())
    channel = connection.channel()
    assert channel.basic_get("kept", auto_ack=True)[2] == b"persistent"
    assert channel.basic_get("fresh", auto_ack=True)[2] == b"on the second node"
    assert channel.queue_declare("kept", passive=True).method.message_count == 0
    connection.close()


def _status(node: HANode) -> subprocess.CompletedProcess[str]:
    """rabbitmq-diagnostics status against ``node``, which it finds from the environment, as on its host."""
    env = dict(
        os.environ,
        RABBITMQ_NODENAME=f"{node.name}@localhost",
        RABBITMQ_NODE_PORT=str(node.amqp_port),
        RABBITMQ_DIST_PORT=str(node.dist_port),
        WARRENMQ_CONFIG_FILE="none",
    )
    code = "import sys; from broker.ctl.diagnostics import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, "status"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_rabbitmq_diagnostics_status_prints_each_nodes_role(pair: tuple[HANode, HANode]) -> None:
    first, second = pair
    first.start()
    first.wait_event("ready")
    second.start()
    second.wait_event("standby")
    active = _status(first)
    assert active.returncode == 0, active.stderr
    assert "High availability\n\nRole: active\nEpoch: 1" in active.stdout
    standby = _status(second)  # no AMQP listener to ask: the CLI channel answers
    assert standby.returncode == 0, standby.stderr
    assert "High availability\n\nRole: standby\nEpoch: None" in standby.stdout
