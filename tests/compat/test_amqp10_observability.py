"""AMQP 1.0 in the management API and in Prometheus, as RabbitMQ 4.0.5 shows it: a 1.0 connection is a
connection (listed, fetched by name, deleted, counted in rabbitmq_connections and the churn) whose sessions
are no channels; the rabbitmq_global_* counters have ``protocol="amqp10"`` rows beside the amqp091 ones,
counting 1.0 publishers, consumers, publishes and deliveries. Each case runs against WarrenMQ
(--profile rabbitmq-4.0) and a RabbitMQ 4.0.5 node with the rabbitmq_prometheus plugin (skipped with the
reason when podman or its image is missing); the expected values are 4.0.5's. The counters are compared
as differences over what a case does, and polled: 4.0.5 lists a connection once its statistics are out."""

from __future__ import annotations

import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import Accepted, Released
from protocol.amqp10.message import encode_sections
from protocol.amqp10.performatives import Attach, Close, Disposition, Transfer
from protocol.amqp10.sections import Data
from protocol.amqp10.terminus import Source, Target
from tests.compat.amqp10_support import (
    INITIAL_DELIVERY_COUNT,
    RABBITMQ4,
    WARRENMQ,
    RawClient,
    attach_receiver,
    credit,
    performatives,
    pika_channel,
    settled_ids,
)
from tests.compat.rabbitmq4_node import RabbitMQ4Node, image_problem
from tests.ports import free_port

pytestmark = pytest.mark.compat

AUTH = ("guest", "guest")


@dataclass
class Observed:
    port: int
    http_url: str
    metrics_url: str


@pytest.fixture(scope="module")
def rabbitmq4_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    problem = image_problem()
    if problem is not None:
        pytest.skip(problem)
    prometheus_port = free_port()
    node = RabbitMQ4Node(
        tmp_path_factory.mktemp("rabbitmq4-prometheus"),
        plugins=("rabbitmq_prometheus",),
        extra_config=f"prometheus.tcp.ip = 127.0.0.1\nprometheus.tcp.port = {prometheus_port}\n",
    )
    node.start()
    try:
        yield Observed(node.port, node.http_url, f"http://127.0.0.1:{prometheus_port}/metrics")
    finally:
        node.stop()


@pytest.fixture(params=[WARRENMQ, RABBITMQ4])
def broker(request: pytest.FixtureRequest) -> Observed:
    if request.param == RABBITMQ4:
        found: Observed = request.getfixturevalue("rabbitmq4_prometheus")
        return found
    process = request.getfixturevalue("warrenmq_40")
    return Observed(
        process.port,
        f"http://127.0.0.1:{process.management_port}",
        f"http://127.0.0.1:{process.ready['prometheus_port']}/metrics",
    )


def _metrics(broker: Observed) -> dict[str, float]:
    """Every sample of /metrics by its name and labels."""
    text = requests.get(broker.metrics_url, timeout=10).text
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            samples[key] = float(value)
    return samples


def _poll(observe: Callable[[], Any], expected: Any, deadline_s: float = 15.0) -> Any:
    """``observe()`` until it gives ``expected`` or the deadline passes; the last observation."""
    deadline = time.monotonic() + deadline_s
    while True:
        seen = observe()
        if seen == expected or time.monotonic() > deadline:
            return seen
        time.sleep(0.2)


def _amqp10_row(broker: Observed) -> dict[str, Any]:
    def rows() -> list[dict[str, Any]]:
        listed = requests.get(f"{broker.http_url}/api/connections", auth=AUTH, timeout=10).json()
        return [row for row in listed if row["protocol"] == "AMQP 1-0"]

    found = _poll(lambda: len(rows()), 1)
    assert found == 1
    return rows()[0]


def test_a_connection_whose_sessions_are_no_channels(broker: Observed) -> None:
    channel = pika_channel(broker.port)  # one 0-9-1 channel beside
    client = RawClient(broker.port)
    client.login()
    client.begin(0)
    client.begin(1)
    try:
        row = _amqp10_row(broker)
        name = urllib.parse.quote(row["name"], safe="")
        fetched = requests.get(f"{broker.http_url}/api/connections/{name}", auth=AUTH, timeout=10)
        its_channels = requests.get(
            f"{broker.http_url}/api/connections/{name}/channels", auth=AUTH, timeout=10
        )
        listed = requests.get(f"{broker.http_url}/api/channels", auth=AUTH, timeout=10).json()
        by_user, by_vhost = (
            requests.get(f"{broker.http_url}{path}", auth=AUTH, timeout=10).json()
            for path in ("/api/connections/username/guest", "/api/vhosts/%2F/connections")
        )
        deleted = requests.delete(
            f"{broker.http_url}/api/connections/{name}", auth=AUTH, headers={"X-Reason": "bye"}, timeout=10
        )
        (closed,) = performatives(client.read_count(1))
    finally:
        client.close()
        channel.connection.close()
    assert fetched.status_code == 200
    assert (fetched.json()["name"], fetched.json()["protocol"]) == (row["name"], "AMQP 1-0")
    assert (its_channels.status_code, its_channels.json()) == (200, [])
    assert [c for c in listed if c["connection_details"]["name"] == row["name"]] == []
    # Listed by its user and its vhost too (4.0.5 lists a user's connections by name, vhost, user and node).
    assert row["name"] in [listed_row["name"] for listed_row in by_user]
    assert row["name"] in [listed_row["name"] for listed_row in by_vhost]
    assert deleted.status_code == 204
    assert isinstance(closed, Close)
    assert isinstance(closed.error, Error)
    assert (closed.error.condition, closed.error.description) == (
        "amqp:internal-error",
        'Connection forced: "bye"',
    )


COUNTED = (
    "rabbitmq_connections",
    "rabbitmq_connections_opened_total",
    "rabbitmq_channels",
    "rabbitmq_channels_opened_total",
    'rabbitmq_auth_attempts_total{protocol="amqp10"}',
    'rabbitmq_auth_attempts_succeeded_total{protocol="amqp10"}',
    'rabbitmq_auth_attempts_failed_total{protocol="amqp10"}',
)


def _object_totals(broker: Observed) -> dict[str, int]:
    overview = requests.get(f"{broker.http_url}/api/overview", auth=AUTH, timeout=10).json()
    return {key: int(overview["object_totals"][key]) for key in ("connections", "channels")}


def test_connection_counts(broker: Observed) -> None:
    """A 1.0 connection counts as a connection (open and opened, in Prometheus and the overview); its two
    sessions as no channel; its login as an amqp10 authentication attempt."""
    before = _metrics(broker)
    totals_before = _object_totals(broker)
    client = RawClient(broker.port)
    client.login()
    client.begin(0)
    client.begin(1)
    try:
        expected = {"rabbitmq_connections": 1, "rabbitmq_connections_opened_total": 1}
        expected |= {"rabbitmq_channels": 0, "rabbitmq_channels_opened_total": 0}
        expected |= dict.fromkeys(COUNTED[4:6], 1) | {COUNTED[6]: 0}
        seen = _poll(
            lambda: {key: _metrics(broker).get(key, 0.0) - before.get(key, 0.0) for key in COUNTED}, expected
        )
        totals = _poll(
            lambda: {key: value - totals_before[key] for key, value in _object_totals(broker).items()},
            {"connections": 1, "channels": 0},
        )
    finally:
        client.close()
    assert seen == expected
    assert totals == {"connections": 1, "channels": 0}


def _amqp10_samples(broker: Observed) -> dict[str, float]:
    return {
        key: value
        for key, value in _metrics(broker).items()
        if key.startswith("rabbitmq_global_") and 'protocol="amqp10"' in key
    }


def _publish(client: RawClient, queue: str) -> None:
    """Three unsettled transfers and a settled one to ``queue``, and an unsettled unroutable one."""
    client.perform(
        Attach(
            name="to-queue",
            handle=1,
            role=False,
            snd_settle_mode=2,
            rcv_settle_mode=0,
            source=Source(address="s1"),
            target=Target(address=f"/queues/{queue}"),
            initial_delivery_count=0,
        )
    )
    client.read_count(2)
    for index in range(4):
        transfer = Transfer(
            handle=1, delivery_id=index, delivery_tag=bytes([index]), message_format=0, settled=index == 3
        )
        client.perform(transfer, payload=encode_sections([Data(b"m%d" % index)]))
    client.read_until(lambda items: len(settled_ids(items)) >= 3)
    client.perform(
        Attach(
            name="unroutable",
            handle=2,
            role=False,
            snd_settle_mode=2,
            rcv_settle_mode=0,
            source=Source(address="s2"),
            target=Target(address="/exchanges/amq.direct/nowhere"),
            initial_delivery_count=0,
        )
    )
    client.read_count(2)
    client.perform(
        Transfer(handle=2, delivery_id=4, delivery_tag=b"\x04", message_format=0, settled=False),
        payload=encode_sections([Data(b"lost")]),
    )
    (outcome,) = performatives(client.read_count(1))
    assert isinstance(outcome, Disposition)
    assert outcome.state == Released()


@pytest.fixture
def queue(broker: Observed) -> Iterator[str]:
    name = f"amqp10-observed-{uuid.uuid4().hex[:10]}"
    channel = pika_channel(broker.port)
    channel.queue_declare(name)
    try:
        yield name
    finally:
        channel.queue_delete(name)
        channel.connection.close()


def test_global_counters_per_protocol(broker: Observed, queue: str) -> None:
    before = _amqp10_samples(broker)
    client = RawClient(broker.port)
    client.login()
    client.begin()
    try:
        _publish(client, queue)
        attach_receiver(client, queue)
        credit(client, 2)
        client.read_count(2)
        client.perform(Disposition(role=True, first=0, last=0, settled=True, state=Accepted()))
        client.perform(Disposition(role=True, first=1, last=1, settled=True, state=Released()))
        credit(client, 1, INITIAL_DELIVERY_COUNT + 2)
        client.read_count(1)  # the released one, redelivered

        def deltas() -> dict[str, float]:
            now = _amqp10_samples(broker)
            return {key: value - before.get(key, 0.0) for key, value in now.items()}

        seen = _poll(lambda: {key: value for key, value in deltas().items() if value}, EXPECTED)
        families = set(_amqp10_samples(broker))
    finally:
        client.close()
    assert seen == EXPECTED
    assert families == AMQP10_SAMPLES


def _labels(queue_type: str) -> str:
    return f'{{protocol="amqp10",queue_type="rabbit_{queue_type}_queue"}}'


# What the case changes, as 4.0.5 counts it (every other amqp10 sample stays as it was).
EXPECTED = {
    'rabbitmq_global_publishers{protocol="amqp10"}': 2.0,
    'rabbitmq_global_consumers{protocol="amqp10"}': 1.0,
    'rabbitmq_global_messages_received_total{protocol="amqp10"}': 5.0,
    'rabbitmq_global_messages_received_confirm_total{protocol="amqp10"}': 4.0,
    'rabbitmq_global_messages_routed_total{protocol="amqp10"}': 4.0,
    'rabbitmq_global_messages_unroutable_returned_total{protocol="amqp10"}': 1.0,
    'rabbitmq_global_messages_confirmed_total{protocol="amqp10"}': 3.0,
    f"rabbitmq_global_messages_delivered_total{_labels('classic')}": 3.0,
    f"rabbitmq_global_messages_redelivered_total{_labels('classic')}": 1.0,
    f"rabbitmq_global_messages_acknowledged_total{_labels('classic')}": 1.0,
}
# Every amqp10 sample 4.0.5's /metrics has: per protocol, and per protocol and queue type.
AMQP10_SAMPLES = {
    f'rabbitmq_global_{name}{{protocol="amqp10"}}'
    for name in (
        "consumers",
        "publishers",
        "messages_received_total",
        "messages_received_confirm_total",
        "messages_routed_total",
        "messages_unroutable_dropped_total",
        "messages_unroutable_returned_total",
        "messages_confirmed_total",
    )
} | {
    f"rabbitmq_global_messages_{name}{_labels(queue_type)}"
    for name in (
        "delivered_total",
        "delivered_consume_manual_ack_total",
        "delivered_consume_auto_ack_total",
        "delivered_get_manual_ack_total",
        "delivered_get_auto_ack_total",
        "get_empty_total",
        "redelivered_total",
        "acknowledged_total",
    )
    for queue_type in ("classic", "quorum", "stream")
}
