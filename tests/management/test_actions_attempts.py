"""Queue actions, rebalance, login-attempt counters, a stored cluster name and user deletion closing the
user's connections, over real sockets (aiohttp's test client, pika, a broker process with a store)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pika
import pika.exceptions
import pytest
import requests

from tests.conftest import start_broker_process
from tests.management.conftest import Api


async def test_queue_actions_answer_as_for_a_queue_that_is_not_mirrored(api: Api) -> None:
    assert (await api.put("/api/queues/%2F/q1", json={})).status == 201
    for action in ("sync", "cancel_sync"):
        assert (await api.post("/api/queues/%2F/q1/actions", json={"action": action})).status == 204
    response = await api.post("/api/queues/%2F/q1/actions", json={"action": "nope"})
    assert (response.status, await response.json()) == (
        400,
        {"error": "bad_request", "reason": ["unknown", "nope"]},
    )
    assert (await api.post("/api/queues/%2F/nosuch/actions", json={"action": "sync"})).status == 404
    assert (await api.post("/api/queues/nosuch/q1/actions", json={"action": "sync"})).status == 404
    assert (await api.post("/api/rebalance/queues")).status == 204


async def test_actions_and_rebalance_need_an_administrator(api: Api) -> None:
    await api.put("/api/users/mon", json={"password": "p", "tags": "monitoring"})
    await api.put("/api/queues/%2F/q1", json={})
    refused = await api.post("/api/queues/%2F/q1/actions", json={"action": "sync"}, user=("mon", "p"))
    assert refused.status == 401
    assert (await api.post("/api/rebalance/queues", user=("mon", "p"))).status == 401
    assert (await api.get("/api/auth/attempts/" + api.context.node, user=("mon", "p"))).status == 200


def _connect(api: Api, user: str, password: str) -> pika.BlockingConnection:
    return pika.BlockingConnection(
        pika.ConnectionParameters(
            "127.0.0.1", api.server.port, credentials=pika.PlainCredentials(user, password)
        )
    )


async def test_auth_attempts_count_amqp_and_http_logins(api: Api) -> None:
    path = "/api/auth/attempts/" + api.context.node
    assert (await api.delete(path)).status == 204
    assert (await api.get("/api/overview", user=("guest", "wrong"))).status == 401
    ok = await asyncio.to_thread(_connect, api, "guest", "guest")
    await asyncio.to_thread(ok.close)
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        await asyncio.to_thread(_connect, api, "guest", "wrong")
    # The DELETE's login was counted before it reset; this GET's own login is counted before it answers.
    rows = await api.json(path)
    assert rows == [
        {"protocol": "amqp091", "auth_attempts": 2, "auth_attempts_failed": 1, "auth_attempts_succeeded": 1},
        {"protocol": "http", "auth_attempts": 2, "auth_attempts_failed": 1, "auth_attempts_succeeded": 1},
    ]
    assert await api.json(path + "/source") == []  # track_auth_attempt_source is off, as RabbitMQ's default
    assert (await api.get("/api/auth/attempts/nosuch@nowhere")).status == 404


async def test_deleting_a_user_closes_its_connections(api: Api) -> None:
    await api.put("/api/users/doomed", json={"password": "p", "tags": ""})
    await api.put("/api/permissions/%2F/doomed", json={"configure": ".*", "write": ".*", "read": ".*"})
    doomed = await asyncio.to_thread(_connect, api, "doomed", "p")
    other = await asyncio.to_thread(_connect, api, "guest", "guest")
    assert (await api.delete("/api/users/doomed")).status == 204
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        await asyncio.to_thread(doomed.process_data_events, 2)
    assert (closed.value.reply_code, closed.value.reply_text) == (
        320,
        "CONNECTION_FORCED - user 'doomed' is deleted",
    )
    await asyncio.to_thread(other.process_data_events, 0)
    assert other.is_open
    await asyncio.to_thread(other.close)


def test_put_cluster_name_is_stored_as_the_global_parameter(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = start_broker_process("--data-dir", str(data))
    base = f"http://127.0.0.1:{broker.management_port}"
    try:
        put = requests.put(
            base + "/api/cluster-name", json={"name": "named"}, auth=("guest", "guest"), timeout=10
        )
        assert put.status_code == 204
    finally:
        broker.stop(signal.SIGKILL)
    broker = start_broker_process("--data-dir", str(data))
    base = f"http://127.0.0.1:{broker.management_port}"
    try:
        auth = ("guest", "guest")
        assert requests.get(base + "/api/cluster-name", auth=auth, timeout=10).json() == {"name": "named"}
        parameter = requests.get(base + "/api/global-parameters/cluster_name", auth=auth, timeout=10).json()
        assert parameter == {"value": "named", "name": "cluster_name"}
    finally:
        broker.stop()
