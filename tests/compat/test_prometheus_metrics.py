"""Differential: rabbitmq_prometheus on a private RabbitMQ node against WarrenMQ's endpoint, after the same
traffic. Every rabbitmq_* family RabbitMQ serves on /metrics, /metrics/per-object and /metrics/detailed is
served with the same type, help text and label names; the Erlang VM's own families (erlang_*, telemetry_*)
are RabbitMQ's runtime, not its API, and are not copied."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pika
import pytest
import requests

from tests.compat.rabbitmq_node import RabbitMQNode, rabbitmq_available
from tests.conftest import BrokerProcess, start_broker_process
from tests.ports import free_port

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]

# Not kept by WarrenMQ (authentication attempts by source): served by RabbitMQ, absent here.
NOT_YET = {"rabbitmq_auth_attempts_detailed_total"}
NOT_YET |= {"rabbitmq_auth_attempts_detailed_succeeded_total", "rabbitmq_auth_attempts_detailed_failed_total"}
DETAILED = (
    "/metrics/detailed?family=queue_coarse_metrics&family=queue_consumer_count&family=queue_metrics"
    "&family=channel_metrics&family=channel_exchange_metrics&family=channel_queue_metrics"
    "&family=channel_process_metrics&family=connection_coarse_metrics&family=connection_metrics"
    "&family=channel_queue_exchange_metrics&family=node_coarse_metrics&family=node_metrics"
    "&family=node_persister_metrics&family=ra_metrics&family=vhost_status&family=exchange_names"
    "&family=exchange_bindings"
)


@dataclass
class PrometheusNode(RabbitMQNode):
    prometheus_port: int = field(default_factory=free_port)

    def _environment(self) -> dict[str, str]:
        env = super()._environment()
        env["RABBITMQ_ENABLED_PLUGINS"] = "rabbitmq_prometheus"
        env["RABBITMQ_CONFIG_FILE"] = str(self.base_dir / "prometheus")
        return env

    def _pick_ports(self) -> None:
        """After a collision the Prometheus port is picked anew too: under parallel workers another process
        can take it between free_port() and the node's listen (eaddrinuse on it, three starts in a row)."""
        super()._pick_ports()
        self.prometheus_port = free_port()

    def _launch(self, timeout_s: float) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        (self.base_dir / "prometheus.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\n"
            f"prometheus.tcp.ip = 127.0.0.1\nprometheus.tcp.port = {self.prometheus_port}\n"
        )
        super()._launch(timeout_s)


Family = tuple[str, str, frozenset[str]]  # type, help, label names


def families(text: str) -> dict[str, Family]:
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    helps = dict(re.findall(r"^# HELP (\S+) (.*)$", text, re.M))
    labels: dict[str, set[str]] = {name: set() for name in types}
    for name, body in re.findall(r"^([a-z_]+)\{([^}]*)\}", text, re.M):
        if name in labels:
            labels[name] |= set(re.findall(r'([a-z_]+)="', body))
    return {
        name: (kind, helps.get(name, ""), frozenset(labels[name]))
        for name, kind in types.items()
        if name.startswith("rabbitmq_")
    }


def _traffic(port: int) -> pika.BlockingConnection:
    connection = pika.BlockingConnection(pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{port}/"))
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare("prom-compat")
    for _ in range(5):
        channel.basic_publish("", "prom-compat", b"x")
    channel.basic_get("prom-compat")
    channel.basic_consume("prom-compat", lambda *args: None)
    connection.process_data_events(0.5)
    return connection


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    node = PrometheusNode(Path(tmp_path_factory.mktemp("rabbitmq-prometheus")))
    node.start()
    warren: BrokerProcess = start_broker_process("--data-dir", "none", "--prometheus-port", "0")
    connections = [_traffic(node.port), _traffic(warren.port)]
    try:
        yield (
            f"http://127.0.0.1:{node.prometheus_port}",
            f"http://127.0.0.1:{warren.ready['prometheus_port']}",
        )
    finally:
        for connection in connections:
            connection.close()
        warren.stop()
        node.stop()


def _families(base: str, path: str) -> dict[str, Family]:
    response = requests.get(base + path, timeout=30)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return families(response.text)


@pytest.mark.parametrize("path", ["/metrics", "/metrics/per-object", DETAILED])
def test_rabbitmq_families_names_types_help_and_labels_match(bases: tuple[str, str], path: str) -> None:
    rabbit, warren = (_families(base, path) for base in bases)
    missing = sorted(set(rabbit) - set(warren) - NOT_YET)
    # warrenmq_*: WarrenMQ's own families (store commit latency, high-availability role), beside RabbitMQ's.
    extra = sorted(name for name in set(warren) - set(rabbit) if not name.startswith("warrenmq_"))
    assert (missing, extra) == ([], [])
    differing = {
        name: (rabbit[name], warren[name])
        for name in set(rabbit) & set(warren)
        # A family RabbitMQ emits without samples shows no labels there: only types and help compare.
        if rabbit[name][:2] != warren[name][:2] or (rabbit[name][2] and rabbit[name][2] != warren[name][2])
    }
    assert differing == {}


def test_memory_breakdown_is_an_unknown_registry_as_in_3_10(bases: tuple[str, str]) -> None:
    answers = [requests.get(base + "/metrics/memory-breakdown", timeout=10) for base in bases]
    assert [(a.status_code, a.text) for a in answers] == [(404, "Unknown Registry")] * 2
