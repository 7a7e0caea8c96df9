"""The management API under ``--profile rabbitmq-4.0`` in the test process (where coverage traces it): the
fields 4.0 added, its 401, the queue actions it removed, bulk-delete of an unknown user, HTTP publishing
refusals and a queue's injected x-queue-type. tests/management/test_compat_http_40.py holds the same answers
to RabbitMQ 4.0.5 on a broker process; the 3.x shape is held to 3.10.8 by test_compat_http.py."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import encode_basic_auth

from broker.config.model import ServerConfig
from broker.core.model.profile import PROFILES
from tests.management.conftest import Api, running_api


@pytest.fixture
async def api40() -> AsyncIterator[Api]:
    config = ServerConfig(host="127.0.0.1", port=0, management_port=None, profile=PROFILES["rabbitmq-4.0"])
    async with running_api(config) as running:
        yield running


async def test_the_fields_40_added(api40: Api) -> None:
    overview = await api40.json("/api/overview")
    assert (overview["cluster_tags"], overview["node_tags"]) == ({}, {})
    assert overview["default_queue_type"] == "classic"
    assert overview["is_op_policy_updating_enabled"] is True
    assert (await api40.json("/api/nodes"))[0]["being_drained"] is False
    assert await api40.json("/api/whoami") == {
        "name": "guest",
        "tags": ["administrator"],
        "is_internal_user": True,
    }
    vhost = await api40.json("/api/vhosts/%2F")
    assert vhost["default_queue_type"] == "classic"
    assert vhost["metadata"]["default_queue_type"] == "classic"


async def test_bad_credentials_get_40s_401(api40: Api) -> None:
    wrong = {"Authorization": encode_basic_auth("guest", "wrong")}
    response = await api40.client.get("/api/overview", headers=wrong)
    assert response.status == 401
    assert "WWW-Authenticate" not in response.headers
    assert await response.json() == {"error": "not_authorized", "reason": "Not_Authorized"}


async def test_removed_actions_and_bulk_delete_of_an_unknown_user(api40: Api) -> None:
    assert (await api40.put("/api/queues/%2F/q", json={"durable": True})).status == 201
    assert (await api40.json("/api/queues/%2F/q"))["arguments"] == {"x-queue-type": "classic"}
    response = await api40.post("/api/queues/%2F/q/actions", json={"action": "sync"})
    assert response.status == 400
    assert await response.json() == {"error": "bad_request", "reason": ["unknown", "sync"]}
    response = await api40.post("/api/users/bulk-delete", json={"users": ["nobody"]})
    assert response.status == 204


async def test_http_publishing_refusals(api40: Api) -> None:
    await api40.put("/api/users/ro", json={"password": "p", "tags": "management"})
    await api40.put("/api/permissions/%2F/ro", json={"configure": "", "write": "", "read": ".*"})
    body = {"properties": {}, "routing_key": "k", "payload": "p", "payload_encoding": "string"}
    read_only = {"Authorization": encode_basic_auth("ro", "p")}
    response = await api40.client.post("/api/exchanges/%2F/amq.direct/publish", json=body, headers=read_only)
    assert response.status == 400
    assert (await response.json())["reason"] == (
        "403 ACCESS_REFUSED - write access to exchange 'amq.direct' in vhost '/' refused for user 'ro'"
    )
    response = await api40.post("/api/exchanges/%2F/nosuch/publish", json=body)
    assert response.status == 404
    assert await response.json() == {"error": "not_found", "reason": "exchange_not_found"}
