"""The management HTTP API over real HTTP (urllib) against a `warrenmq serve` process."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pika
import pytest

from tests.conftest import BrokerProcess, start_broker_process

AUTH = "Basic " + base64.b64encode(b"guest:guest").decode()


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    process = start_broker_process()
    yield process
    process.stop()


def call(
    broker: BrokerProcess, method: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{broker.management_port}{path}",
        method=method,
        headers={"Authorization": AUTH, **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            body = response.read()
            return response.status, json.loads(body) if body else None
    except urllib.error.HTTPError as error:
        body = error.read()
        return error.code, json.loads(body) if body else None


Api = Callable[..., tuple[int, Any]]


@pytest.fixture
def api(broker: BrokerProcess) -> Api:
    return lambda method, path, **kw: call(broker, method, path, **kw)


def test_readiness_line_reports_the_management_port(broker: BrokerProcess) -> None:
    assert isinstance(broker.management_port, int)
    assert broker.management_port > 0


def test_readiness_and_health_endpoints(api: Api) -> None:
    assert api("GET", "/ready") == (200, {"status": "ok"})
    assert api("GET", "/api/health/checks/alarms") == (200, {"status": "ok"})
    assert api("GET", "/api/aliveness-test/%2F") == (200, {"status": "ok"})
    assert api("GET", "/api/aliveness-test/nope")[0] == 404


def test_requests_without_valid_credentials_are_refused(broker: BrokerProcess) -> None:
    status, body = call(broker, "GET", "/api/overview", headers={"Authorization": "Basic Z3Vlc3Q6bm9wZQ=="})
    # RabbitMQ (3.10.8 oracle, and rabbit_mgmt_util since) spells this one "not_authorized".
    assert (status, body) == (401, {"error": "not_authorized", "reason": "Login failed"})


def test_queue_depths_exchanges_and_bindings(api: Api, broker: BrokerProcess, unique: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(broker.url))
    channel = connection.channel()
    channel.queue_declare(f"{unique}-q", arguments={"x-max-length": 10})
    channel.exchange_declare(f"{unique}-x", "topic")
    channel.queue_bind(f"{unique}-q", f"{unique}-x", "a.#")
    for _ in range(3):
        channel.basic_publish("", f"{unique}-q", b"m")
    channel.basic_get(f"{unique}-q")  # one unacked
    status, queue = api("GET", f"/api/queues/%2F/{unique}-q")
    assert status == 200
    assert {
        key: queue[key] for key in ("messages", "messages_ready", "messages_unacknowledged", "consumers")
    } == {
        "messages": 3,
        "messages_ready": 2,
        "messages_unacknowledged": 1,
        "consumers": 0,
    }
    assert (queue["name"], queue["vhost"], queue["durable"], queue["auto_delete"], queue["exclusive"]) == (
        f"{unique}-q",
        "/",
        False,
        False,
        False,
    )
    assert queue["arguments"] == {"x-max-length": 10}
    assert any(q["name"] == f"{unique}-q" for q in api("GET", "/api/queues")[1])
    exchanges = {e["name"]: e for e in api("GET", "/api/exchanges/%2F")[1]}
    assert exchanges[f"{unique}-x"]["type"] == "topic"
    bindings = [b for b in api("GET", "/api/bindings/%2F")[1] if b["destination"] == f"{unique}-q"]
    assert [(b["source"], b["routing_key"]) for b in bindings] == [
        ("", f"{unique}-q"),
        (f"{unique}-x", "a.#"),
    ]
    overview = api("GET", "/api/overview")[1]
    assert overview["object_totals"]["connections"] >= 1
    assert overview["journal"] is None  # off by default
    assert api("GET", "/api/queues/%2F/missing")[0] == 404
    connection.close()


def test_deleting_a_connection_closes_it_with_320_and_the_given_reason(
    api: Api, broker: BrokerProcess
) -> None:
    connection = pika.BlockingConnection(
        pika.URLParameters(broker.url + "?client_properties={'connection_name':'victim'}")
    )
    victims = [
        c
        for c in api("GET", "/api/connections")[1]
        if c["client_properties"].get("connection_name") == "victim"
    ]
    assert len(victims) == 1
    name = victims[0]["name"]
    status, _ = api(
        "DELETE", "/api/connections/" + urllib.parse.quote(name, safe=""), headers={"X-Reason": "bye"}
    )
    assert status == 204
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        connection.process_data_events(time_limit=5)
    assert (closed.value.reply_code, closed.value.reply_text) == (320, "CONNECTION_FORCED - bye")


def test_vhosts_can_be_created_listed_and_deleted(api: Api, broker: BrokerProcess, unique: str) -> None:
    assert api("PUT", f"/api/vhosts/{unique}")[0] == 201
    assert api("PUT", f"/api/vhosts/{unique}")[0] == 204
    assert api("GET", f"/api/vhosts/{unique}")[1]["name"] == unique
    connection = pika.BlockingConnection(pika.URLParameters(broker.url + unique))
    assert api("DELETE", f"/api/vhosts/{unique}")[0] == 204
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        connection.process_data_events(time_limit=5)
    assert closed.value.reply_text == f"CONNECTION_FORCED - vhost '{unique}' is deleted"
    assert api("GET", f"/api/vhosts/{unique}")[0] == 404


def test_definitions_export_lists_user_entities(api: Api, broker: BrokerProcess, unique: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(broker.url))
    connection.channel().queue_declare(f"{unique}-durable", durable=True)
    definitions = api("GET", "/api/definitions")[1]
    assert {
        "name": "/",
        "limits": [],
        "metadata": {"description": "Default virtual host", "tags": []},
    } in definitions["vhosts"]
    assert [u["name"] for u in definitions["users"]] == ["guest"]
    assert any(q["name"] == f"{unique}-durable" and q["durable"] for q in definitions["queues"])
    assert not any(e["name"].startswith("amq.") or e["name"] == "" for e in definitions["exchanges"])
    connection.close()
