"""Differential: the same HTTP API scenario against a private RabbitMQ node (management plugin) and against
WarrenMQ; status codes, error bodies, Location headers, key sets (every key RabbitMQ returns must be there)
and the values both brokers know must agree."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pika
import pika.exceptions
import pytest
import requests

from tests.compat.rabbitmq_node import rabbitmq_available
from tests.management.compat_http_scenario import SCENARIO
from tests.management.http_differential import GUEST, Pair, differences, key_set, start_pair

pytestmark = [
    pytest.mark.compat,
    pytest.mark.slow,
    pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ (Debian rabbitmq-server) not installed"),
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    yield from start_pair(tmp_path_factory.mktemp("rabbitmq-management"))


@pytest.fixture
def bases(pair: Pair) -> tuple[str, str]:
    return pair.bases


@pytest.fixture
def amqp_ports(pair: Pair) -> tuple[int, int]:
    return pair.amqp_ports


def test_the_scenario_answers_as_rabbitmq_does(bases: tuple[str, str]) -> None:
    found = differences(*bases, SCENARIO)
    assert found == [], "\n".join(found)


def _poll(base: str, path: str) -> list[dict[str, Any]]:
    """RabbitMQ lists connections, channels and consumers once its stats collector has seen them. A channel's
    first row may come from its creation (prefetch_count 0, no consumer yet): its row counts once it shows the
    consumer, which the client added after its basic.qos."""
    deadline = time.monotonic() + 30
    while True:
        rows = requests.get(base + path, auth=GUEST, timeout=10).json()
        settled = path != "/api/channels" or all(row.get("consumer_count", 0) >= 1 for row in rows)
        if (rows and settled) or time.monotonic() > deadline:
            return list(rows)
        time.sleep(0.2)


def test_connections_channels_and_consumers_carry_rabbitmqs_keys(
    bases: tuple[str, str], amqp_ports: tuple[int, int]
) -> None:
    clients = []
    listings: list[dict[str, list[dict[str, Any]]]] = []
    for base, port in zip(bases, amqp_ports, strict=True):
        params = pika.URLParameters(
            f"amqp://guest:guest@127.0.0.1:{port}/?client_properties={{'connection_name':'cmp'}}"
        )
        connection = pika.BlockingConnection(params)
        channel = connection.channel()
        channel.basic_qos(prefetch_count=3)
        channel.queue_declare("compat-consumed")
        channel.basic_consume("compat-consumed", lambda *args: None, consumer_tag="ctag")
        clients.append(connection)
        listings.append(
            {path: _poll(base, path) for path in ("/api/connections", "/api/channels", "/api/consumers")}
        )
    try:
        rabbit, warren = listings
        for path in rabbit:
            assert key_set(rabbit[path]) - key_set(warren[path]) == set(), path
        # ("channels" lags on RabbitMQ until its next stats emission, so it is not compared.)
        for key in ("user", "vhost", "protocol", "auth_mechanism", "user_provided_name", "state"):
            assert rabbit["/api/connections"][0][key] == warren["/api/connections"][0][key], key
        for key in (
            "number",
            "prefetch_count",
            "consumer_count",
            "confirm",
            "transactional",
            "user",
            "vhost",
        ):
            assert rabbit["/api/channels"][0][key] == warren["/api/channels"][0][key], key
        for key in (
            "consumer_tag",
            "queue",
            "ack_required",
            "exclusive",
            "prefetch_count",
            "arguments",
            "active",
        ):
            assert rabbit["/api/consumers"][0][key] == warren["/api/consumers"][0][key], key
    finally:
        for connection in clients:
            connection.close()


def test_definitions_travel_both_ways_and_users_log_in_with_their_hashes(bases: tuple[str, str]) -> None:
    rabbit_base, warren_base = bases
    for base, user in ((rabbit_base, "made-in-rabbit"), (warren_base, "made-in-warren")):
        put = requests.put(
            f"{base}/api/users/{user}",
            json={"password": "s3cret", "tags": "management"},
            auth=GUEST,
            timeout=10,
        )
        assert put.status_code == 201
        requests.put(f"{base}/api/vhosts/compat-defs", auth=GUEST, timeout=10)
        requests.put(
            f"{base}/api/permissions/compat-defs/{user}",
            json={"configure": ".*", "write": ".*", "read": "^r"},
            auth=GUEST,
            timeout=10,
        )
    for source, target, user in (
        (rabbit_base, warren_base, "made-in-rabbit"),
        (warren_base, rabbit_base, "made-in-warren"),
    ):
        exported = requests.get(f"{source}/api/definitions", auth=GUEST, timeout=10).json()
        imported = requests.post(f"{target}/api/definitions", json=exported, auth=GUEST, timeout=30)
        assert imported.status_code in (200, 204), imported.text
        whoami = requests.get(f"{target}/api/whoami", auth=(user, "s3cret"), timeout=10)
        assert whoami.json() == {"name": user, "tags": ["management"]}
        permission = requests.get(
            f"{target}/api/permissions/compat-defs/{user}", auth=GUEST, timeout=10
        ).json()
        assert permission["read"] == "^r"


def test_deleting_a_user_closes_its_connections_as_rabbitmq_does(
    bases: tuple[str, str], amqp_ports: tuple[int, int]
) -> None:
    closes = []
    for base, port in zip(bases, amqp_ports, strict=True):
        requests.put(
            base + "/api/users/compat-doomed", json={"password": "p", "tags": ""}, auth=GUEST, timeout=10
        )
        requests.put(
            base + "/api/permissions/%2F/compat-doomed",
            json={"configure": ".*", "write": ".*", "read": ".*"},
            auth=GUEST,
            timeout=10,
        )
        params = pika.ConnectionParameters(
            "127.0.0.1", port, credentials=pika.PlainCredentials("compat-doomed", "p")
        )
        connection = pika.BlockingConnection(params)
        _poll(base, "/api/connections")  # RabbitMQ tracks the connection once it is registered
        assert requests.delete(base + "/api/users/compat-doomed", auth=GUEST, timeout=10).status_code == 204
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
            connection.process_data_events(10)
        closes.append((closed.value.reply_code, closed.value.reply_text))
    assert closes[0] == closes[1] == (320, "CONNECTION_FORCED - user 'compat-doomed' is deleted")


def test_auth_attempts_carry_rabbitmqs_keys(bases: tuple[str, str]) -> None:
    listings = []
    for base in bases:
        node = requests.get(base + "/api/overview", auth=GUEST, timeout=10).json()["node"]
        path = f"{base}/api/auth/attempts/{node}"
        assert requests.delete(path, auth=GUEST, timeout=10).status_code == 204
        assert requests.get(base + "/api/overview", auth=("guest", "wrong"), timeout=10).status_code == 401
        listings.append(
            (
                requests.get(path, auth=GUEST, timeout=10).json(),
                requests.get(path + "/source", auth=GUEST, timeout=10).json(),
            )
        )
    assert listings[0] == listings[1]


def test_a_vhosts_default_queue_type_goes_where_rabbitmq_puts_it(
    bases: tuple[str, str], amqp_ports: tuple[int, int]
) -> None:
    """rabbit_amqqueue:augment_declare_args: the vhost's default type goes to a durable, non-exclusive,
    non-auto-delete queue that names no x-queue-type, over AMQP and over the HTTP API alike."""
    declares: list[tuple[str, dict[str, Any]]] = [
        ("amqp-durable", {"durable": True}),
        ("amqp-transient", {"durable": False}),
        ("amqp-exclusive", {"durable": True, "exclusive": True}),
        ("amqp-auto-delete", {"durable": True, "auto_delete": True}),
        ("amqp-explicit", {"durable": True, "arguments": {"x-queue-type": "classic"}}),
    ]
    over_http = [
        ("http-durable", {"durable": True}),
        ("http-transient", {"durable": False}),
        ("http-auto-delete", {"durable": True, "auto_delete": True}),
    ]
    seen = []
    for base, port in zip(bases, amqp_ports, strict=True):
        assert requests.put(
            base + "/api/vhosts/dqt", json={"defaultqueuetype": "quorum"}, auth=GUEST, timeout=10
        ).status_code in (201, 204)
        requests.put(
            base + "/api/permissions/dqt/guest",
            json={"configure": ".*", "write": ".*", "read": ".*"},
            auth=GUEST,
            timeout=10,
        )
        connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port, "dqt"))
        channel = connection.channel()
        for name, flags in declares:
            channel.queue_declare(name, **flags)
        # A redeclare without arguments matches the queue the default made (the same augmented arguments).
        channel.queue_declare("amqp-durable", durable=True)
        for name, body in over_http:
            assert (
                requests.put(f"{base}/api/queues/dqt/{name}", json=body, auth=GUEST, timeout=10).status_code
                == 201
            )
        rows = requests.get(base + "/api/queues/dqt", auth=GUEST, timeout=10).json()
        seen.append(sorted((q["name"], q["type"], q["durable"], q["arguments"]) for q in rows))
        connection.close()
        assert requests.delete(base + "/api/vhosts/dqt", auth=GUEST, timeout=10).status_code == 204
    assert seen[0] == seen[1]
    assert ("amqp-durable", "quorum", True, {"x-queue-type": "quorum"}) in seen[1]
