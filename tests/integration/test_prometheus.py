"""A real Prometheus (Debian package `prometheus`) scrapes a WarrenMQ started here, and the RabbitMQ-Overview
Grafana dashboard's PromQL queries (3.10.8's dashboard: every query joins rabbitmq_identity_info on instance)
return data through Prometheus' HTTP API, with the values the broker holds."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pytest
import requests

from tests.conftest import BrokerProcess, start_broker_process
from tests.ports import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(PROMETHEUS).exists(),
        reason="Prometheus (Debian package `prometheus`) is not installed; .ci/run installs it",
    ),
]

# The dashboard's panels, by shape: instant sums per cluster, rates per node, node gauges joined on identity.
CLUSTER_SUMS = [
    "rabbitmq_queue_messages_ready",
    "rabbitmq_queue_messages_unacked",
    "rabbitmq_connections",
    "rabbitmq_channels",
    "rabbitmq_channel_consumers",
    "rabbitmq_consumers",
    "rabbitmq_queues",
    "rabbitmq_build_info",
]
RATES = [
    "rabbitmq_global_messages_received_total",
    "rabbitmq_global_messages_received_confirm_total",
    "rabbitmq_global_messages_confirmed_total",
    "rabbitmq_global_messages_routed_total",
    "rabbitmq_global_messages_unroutable_dropped_total",
    "rabbitmq_global_messages_unroutable_returned_total",
    "rabbitmq_global_messages_redelivered_total",
    "rabbitmq_global_messages_delivered_consume_auto_ack_total",
    "rabbitmq_global_messages_delivered_consume_manual_ack_total",
    "rabbitmq_global_messages_delivered_get_auto_ack_total",
    "rabbitmq_global_messages_delivered_get_manual_ack_total",
    "rabbitmq_global_messages_get_empty_total",
    "rabbitmq_global_messages_acknowledged_total",
    "rabbitmq_queues_declared_total",
    "rabbitmq_queues_created_total",
    "rabbitmq_queues_deleted_total",
    "rabbitmq_channels_opened_total",
    "rabbitmq_channels_closed_total",
    "rabbitmq_connections_opened_total",
    "rabbitmq_connections_closed_total",
]
NODE_DIFFERENCES = [
    ("rabbitmq_resident_memory_limit_bytes", "rabbitmq_process_resident_memory_bytes"),
    ("rabbitmq_process_max_fds", "rabbitmq_process_open_fds"),
    ("rabbitmq_process_max_tcp_sockets", "rabbitmq_process_open_tcp_sockets"),
]
NODE_GAUGES = [
    "rabbitmq_disk_space_available_bytes",
    "rabbitmq_build_info",
    "rabbitmq_queues",
    "rabbitmq_channels",
]


def _join(expr: str, cluster: str, labels: str) -> str:
    identity = f'rabbitmq_identity_info{{rabbitmq_cluster="{cluster}", namespace=""}}'
    return f"{expr} * on(instance) group_left({labels}) {identity}"


def dashboard_queries(cluster: str) -> list[str]:
    node = "rabbitmq_cluster, rabbitmq_node"
    queries = [f"sum({_join(name, cluster, 'rabbitmq_cluster')})" for name in CLUSTER_SUMS]
    queries += [f"sum({_join(f'rate({name}[60s])', cluster, node)}) by(rabbitmq_node)" for name in RATES]
    queries += [f"sum({_join(name, cluster, node)}) by(rabbitmq_node)" for name in CLUSTER_SUMS[:2]]
    queries += [f"({_join(a, cluster, node)}) - ({_join(b, cluster, node)})" for a, b in NODE_DIFFERENCES]
    queries += [_join(name, cluster, node) for name in NODE_GAUGES]
    queries.append('count(rabbitmq_identity_info{namespace=""})')
    return queries


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    process = start_broker_process("--data-dir", "none", "--prometheus-port", "0")
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def prometheus(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("prometheus")
    (root / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: warrenmq\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{broker.ready['prometheus_port']}']\n"
    )
    port = free_port()
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={root / 'prometheus.yml'}",
            f"--storage.tsdb.path={root / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


def _query(base: str, expr: str) -> list[dict[str, Any]]:
    response = requests.get(f"{base}/api/v1/query", params={"query": expr}, timeout=10)
    assert response.status_code == 200, (expr, response.text)
    body = response.json()
    assert body["status"] == "success", (expr, body)
    return list(body["data"]["result"])


def _wait(base: str, expr: str, ready: Any, timeout_s: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    result: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            result = _query(base, expr)
        except requests.ConnectionError:
            result = []
        if ready(result):
            return result
        time.sleep(0.5)
    raise AssertionError(f"{expr}: {result}")


def test_the_overview_dashboards_queries_return_the_brokers_figures(
    broker: BrokerProcess, prometheus: str
) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{broker.port}/"))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare("prom-q")
        for _ in range(7):
            channel.basic_publish("", "prom-q", b"m")
        method, _, _ = channel.basic_get("prom-q")
        assert method is not None  # one unacked, six ready
        cluster = _wait(prometheus, "rabbitmq_identity_info", bool)[0]["metric"]["rabbitmq_cluster"]
        # Two scrapes after the traffic: rate() has two points and the gauges are current.
        _wait(
            prometheus,
            'count_over_time(up{job="warrenmq"}[1m])',
            lambda r: bool(r) and float(r[0]["value"][1]) >= 3,
        )
        empty = [expr for expr in dashboard_queries(cluster) if not _query(prometheus, expr)]
        assert empty == []
        ready = _wait(
            prometheus, dashboard_queries(cluster)[0], lambda r: bool(r) and r[0]["value"][1] == "6"
        )
        assert ready[0]["value"][1] == "6"
        [unacked] = _query(prometheus, dashboard_queries(cluster)[1])
        assert unacked["value"][1] == "1"
        [received] = _query(prometheus, 'rabbitmq_global_messages_received_total{job="warrenmq"}')
        assert received["value"][1] == "7"
        per_node = _join("rabbitmq_connections", cluster, "rabbitmq_cluster, rabbitmq_node")
        [node] = _query(prometheus, f"sum({per_node}) by(rabbitmq_node)")
        assert node["metric"]["rabbitmq_node"]
        assert node["value"][1] == "1"
    finally:
        connection.close()
