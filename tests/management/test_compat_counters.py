"""Differential: the I/O and message counters of /api/overview, /api/vhosts, /api/queues and /api/nodes after
the same traffic on a private RabbitMQ 3.10.8 node and on WarrenMQ (with a data directory): 1,000 persistent
confirmed publishes and 100 transient ones into a durable classic queue, 100 persistent ones into a
transient queue, 300 fetched and acked.

Where RabbitMQ's figure is exact (message counts, bytes, ``disk_writes``: the persistent messages of
durable queues handed to disk) ours must be equal. Where it counts Erlang's file operations (``io_*``,
``queue_index_*``, ``mnesia_*``) ours counts the store's own and the test holds the relation: zero where
RabbitMQ's is zero, non-zero where it is, growing with the work (docs/management.md, "Counters")."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pytest
import requests

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.conftest import start_broker_process
from tests.management.test_compat_statistics import CONF, StatsNode

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]
GUEST = ("guest", "guest")
PERSISTENT, TRANSIENT, FETCHED = 1000, 100, 300
QUEUE_FIELDS = (
    "messages",
    "messages_ready",
    "messages_unacknowledged",
    "messages_persistent",
    "messages_ram",
    "message_bytes",
    "message_bytes_ready",
    "message_bytes_persistent",
    "message_bytes_ram",
)
EXACT_MESSAGE_STATS = ("publish", "confirm", "get", "ack", "deliver_get", "disk_writes", "disk_reads")
# Counters of file operations: RabbitMQ's count Erlang's, ours the store's; they must move alike.
# (queue_index_write_count is not among them: RabbitMQ's moves when its index journal is flushed to a
# segment, which happened after the traffic in some runs and not in others.)
WORK_COUNTERS = ("io_write_count", "io_write_bytes", "io_sync_count")
ZERO_ALIKE = (*WORK_COUNTERS, "msg_store_write_count", "msg_store_read_count", "queue_index_read_count")


def _get(base: str, path: str) -> Any:
    response = requests.get(base + path, auth=GUEST, timeout=10)
    assert response.status_code == 200, (path, response.text)
    return response.json()


def _traffic(port: int) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{port}/"))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare("cnt-durable", durable=True)
        channel.queue_declare("cnt-transient", durable=False)
        for _ in range(PERSISTENT):
            channel.basic_publish("", "cnt-durable", b"p" * 100, pika.BasicProperties(delivery_mode=2))
        for _ in range(TRANSIENT):
            channel.basic_publish("", "cnt-durable", b"t" * 50, pika.BasicProperties(delivery_mode=1))
            channel.basic_publish("", "cnt-transient", b"x" * 30, pika.BasicProperties(delivery_mode=2))
        for _ in range(FETCHED):
            method, _, _ = channel.basic_get("cnt-durable")
            assert method is not None
            channel.basic_ack(method.delivery_tag)
    finally:
        connection.close()


def _figures(base: str) -> dict[str, Any]:
    overview = _get(base, "/api/overview")
    vhost = _get(base, "/api/vhosts/%2F")
    return {
        "message_stats": {name: overview["message_stats"].get(name) for name in EXACT_MESSAGE_STATS},
        "vhost_message_stats": {
            name: value for name, value in vhost.get("message_stats", {}).items() if isinstance(value, int)
        },
        "queue_totals": {
            name: overview["queue_totals"].get(name)  # empty until RabbitMQ's first collection
            for name in ("messages", "messages_ready", "messages_unacknowledged")
        },
        "object_totals": {name: overview["object_totals"][name] for name in ("queues", "consumers")},
        "queues": {
            name: {field: _get(base, f"/api/queues/%2F/{name}").get(field) for field in QUEUE_FIELDS}
            for name in ("cnt-durable", "cnt-transient")
        },
    }


def _settled(base: str) -> dict[str, Any]:
    """RabbitMQ's statistics arrive every second here (collect_statistics_interval): wait until two reads
    agree and show the traffic."""
    deadline = time.monotonic() + 60
    previous: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        figures = _figures(base)
        done = figures["message_stats"]["ack"] == FETCHED and figures["queue_totals"]["messages"] == (
            PERSISTENT + 2 * TRANSIENT - FETCHED
        )
        if done and figures == previous:
            return figures
        previous = figures
        time.sleep(1.2)
    raise AssertionError(f"counters did not settle at {base}: {previous}")


def _node(base: str) -> dict[str, Any]:
    node: dict[str, Any] = _get(base, "/api/nodes")[0]
    return node


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    oracle = StatsNode(Path(tmp_path_factory.mktemp("counters-oracle")))
    oracle.start()
    conf_dir = tmp_path_factory.mktemp("counters-conf")
    (conf_dir / "rabbitmq.conf").write_text(CONF)
    ours = start_broker_process(
        "--data-dir",
        str(tmp_path_factory.mktemp("counters-data")),
        env={"RABBITMQ_CONFIG_FILE": str(conf_dir / "rabbitmq.conf")},
    )
    try:
        sides = {
            "rabbitmq": (oracle.http_url, oracle.port),
            "warrenmq": (f"http://127.0.0.1:{ours.management_port}", ours.port),
        }
        out: dict[str, Any] = {}
        for side, (base, port) in sides.items():
            before = _node(base)
            _traffic(port)
            out[side] = {"figures": _settled(base), "before": before, "after": _node(base)}
        yield out
    finally:
        ours.stop()
        oracle.stop()


def test_message_and_byte_figures_equal_rabbitmqs(runs: dict[str, Any]) -> None:
    theirs, mine = runs["rabbitmq"]["figures"], runs["warrenmq"]["figures"]
    assert mine == theirs
    # Not trivially equal: RabbitMQ wrote each persistent message of the durable queue, and holds bytes.
    assert theirs["message_stats"]["disk_writes"] == PERSISTENT
    assert theirs["queues"]["cnt-durable"]["message_bytes_persistent"] == (PERSISTENT - FETCHED) * 100


def test_io_counters_move_as_rabbitmqs(runs: dict[str, Any]) -> None:
    for side in ("rabbitmq", "warrenmq"):
        before, after = runs[side]["before"], runs[side]["after"]
        for name in WORK_COUNTERS:
            # RabbitMQ's node row has no counters until its first collection: 0 then.
            assert after[name] > before.get(name, 0), (side, name, before.get(name), after[name])
    theirs, mine = runs["rabbitmq"]["after"], runs["warrenmq"]["after"]
    assert {name: bool(mine[name]) for name in ZERO_ALIKE} == {
        name: bool(theirs[name]) for name in ZERO_ALIKE
    }
    # Each confirmed persistent publish waited for a synced write on both (one publish in flight at a time).
    for node in (theirs, mine):
        assert node["io_sync_count"] >= PERSISTENT
        assert node["io_write_bytes"] >= PERSISTENT * 100  # at least the persistent bodies
        assert node["io_write_avg_time"] > 0
        assert node["mnesia_disk_tx_count"] > 0  # the durable queue's declaration went to disk
        assert node["connection_created"] >= 1
        assert node["channel_created"] >= 1
        assert node["queue_declared"] >= 2
