"""Differential: the same traffic (confirmed publishes, basic.get with ack, a consumer with acks, a get on an
empty queue) against a private RabbitMQ node and WarrenMQ, both sampling every second; the key sets of
message_stats, every ``*_details`` object (with and without a samples window), queue_totals, object_totals
and churn_rates must be RabbitMQ's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pytest
import requests

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.conftest import BrokerProcess, start_broker_process
from tests.management.rabbitmq_management_node import ManagementNode

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]
GUEST = ("guest", "guest")
CONF = "collect_statistics_interval = 1000\n"
WINDOW = "lengths_age=60&lengths_incr=5&msg_rates_age=60&msg_rates_incr=5&data_rates_age=60&data_rates_incr=5"


class StatsNode(ManagementNode):
    def _launch(self, timeout_s: float) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        (self.base_dir / "management.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\n"
            f"management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = {self.http_port}\n{CONF}"
        )
        super(ManagementNode, self)._launch(timeout_s)


def _traffic(port: int) -> pika.BlockingConnection:
    connection = pika.BlockingConnection(pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{port}/"))
    channel = connection.channel()
    channel.confirm_delivery()
    channel.exchange_declare("stx", "direct")
    channel.queue_declare("stq")
    channel.queue_declare("stq-empty")
    channel.queue_bind("stq", "stx", "k")
    for index in range(20):
        channel.basic_publish("stx", "k", str(index).encode())
    for _ in range(5):
        method, _, _ = channel.basic_get("stq")
        assert method is not None
        channel.basic_ack(method.delivery_tag)
    assert channel.basic_get("stq-empty")[0] is None
    for method, _, _ in channel.consume("stq", inactivity_timeout=0.5):
        if method is None:
            break
        channel.basic_ack(method.delivery_tag)
    channel.cancel()
    channel.basic_publish("", "stq", b"left")
    return connection


def _get(base: str, path: str) -> Any:
    response = requests.get(base + path, auth=GUEST, timeout=10)
    assert response.status_code == 200, (path, response.text)
    return response.json()


WINDOWED = tuple(
    f"{path}?{WINDOW}"
    for path in ("/api/overview", "/api/vhosts/%2F", "/api/queues/%2F/stq", "/api/exchanges/%2F/stx")
)


def _samples_lists(value: Any) -> Iterator[list[Any]]:
    """Every ``samples`` list in a body (what a ``*_details`` object carries when a window is asked for)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "samples" and isinstance(inner, list):
                yield inner
            else:
                yield from _samples_lists(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _samples_lists(inner)


def _settled(base: str) -> None:
    """Wait until the stats of the traffic above are visible (RabbitMQ's collector runs every second here)
    and every windowed ``*_details`` has its samples (WarrenMQ's list is empty until the object has been
    sampled, and an empty list has no keys to compare)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        queue = _get(base, "/api/queues/%2F/stq")
        channels = _get(base, "/api/channels")
        overview = _get(base, "/api/overview")
        samples = [found for path in WINDOWED for found in _samples_lists(_get(base, path))]
        if (
            queue.get("message_stats", {}).get("ack") == 20
            and channels
            and "message_stats" in channels[0]
            and overview.get("message_stats", {}).get("publish", 0) >= 21
            and samples
            and all(samples)
        ):
            return
        time.sleep(0.3)
    raise AssertionError(f"statistics never appeared at {base}")


def _shape(value: Any, path: str = "") -> set[str]:
    """Every key path of the statistics parts of a body (samples lists reduced to one element's keys)."""
    keys: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            keys.add(f"{path}{key}")
            if isinstance(inner, (dict, list)):
                keys |= _shape(inner, f"{path}{key}.")
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        keys |= _shape(value[0], f"{path}[].")
    return keys


_STATS_PARTS = ("message_stats", "queue_totals", "object_totals", "churn_rates")


def _stats_keys(body: dict[str, Any]) -> set[str]:
    parts = {key: value for key, value in body.items() if key in _STATS_PARTS or key.endswith("_details")}
    return {key for key in _shape(parts) if "garbage_collection" not in key and "reductions" not in key}


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    node = StatsNode(tmp_path_factory.mktemp("rabbitmq-stats"))
    node.start()
    conf_dir: Path = tmp_path_factory.mktemp("warren-conf")
    (conf_dir / "rabbitmq.conf").write_text(CONF)
    warren: BrokerProcess = start_broker_process(
        "--data-dir", "none", env={"RABBITMQ_CONFIG_FILE": str(conf_dir / "rabbitmq.conf")}
    )
    connections = []
    try:
        for port in (node.port, warren.port):
            connections.append(_traffic(port))
        rabbit, ours = node.http_url, f"http://127.0.0.1:{warren.management_port}"
        _settled(rabbit)
        _settled(ours)
        yield rabbit, ours
    finally:
        for connection in connections:
            connection.close()
        warren.stop()
        node.stop()


@pytest.mark.parametrize(
    "path",
    [
        "/api/overview",
        f"/api/overview?{WINDOW}",
        "/api/vhosts/%2F",
        f"/api/vhosts/%2F?{WINDOW}",
        "/api/queues/%2F/stq",
        f"/api/queues/%2F/stq?{WINDOW}",
        "/api/queues/%2F/stq-empty",
        "/api/exchanges/%2F/stx",
        f"/api/exchanges/%2F/stx?{WINDOW}",
        "/api/channels",
        "/api/connections",
    ],
)
def test_statistics_have_rabbitmqs_key_sets(bases: tuple[str, str], path: str) -> None:
    rabbit_base, warren_base = bases
    rabbit, warren = _get(rabbit_base, path), _get(warren_base, path)
    if isinstance(rabbit, list):
        rabbit, warren = rabbit[0], warren[0]
    expected, actual = _stats_keys(rabbit), _stats_keys(warren)
    assert (sorted(expected - actual), sorted(actual - expected)) == ([], [])


def test_counts_agree_with_rabbitmq(bases: tuple[str, str]) -> None:
    rabbit_base, warren_base = bases
    for path, part in (
        ("/api/queues/%2F/stq", "message_stats"),
        ("/api/exchanges/%2F/stx", "message_stats"),
        ("/api/vhosts/%2F", "message_stats"),
    ):
        rabbit, warren = _get(rabbit_base, path)[part], _get(warren_base, path)[part]
        counts = {key: value for key, value in rabbit.items() if isinstance(value, int)}
        assert counts == {key: warren.get(key) for key in counts}, path
