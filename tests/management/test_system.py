"""Overview, nodes, connections/channels/consumers (with a real aio-pika client), definitions, health checks
and the aliveness test, through aiohttp's test client."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import aio_pika
import aio_pika.abc
import aiohttp

from tests.management.conftest import Api
from tests.management.test_access import RABBITMQ_GUEST_HASH

# The top-level keys of GET /api/overview on RabbitMQ 3.10.8 (WarrenMQ adds "journal").
OVERVIEW_KEYS = {
    "churn_rates", "cluster_name", "contexts", "disable_stats", "enable_queue_totals", "erlang_full_version",
    "erlang_version", "exchange_types", "listeners", "management_version", "message_stats", "node",
    "object_totals", "product_name", "product_version", "queue_totals", "rabbitmq_version", "rates_mode",
    "release_series_support_status", "sample_retention_policies", "statistics_db_event_queue",
}  # fmt: skip


async def test_overview_whoami_cluster_name_extensions(api: Api) -> None:
    overview = await api.json("/api/overview")
    assert set(overview) >= OVERVIEW_KEYS
    assert overview["journal"] is None
    assert {listener["protocol"]: listener["port"] for listener in overview["listeners"]} == {
        "amqp": api.server.port,
        "http": api.context.http_port,
    }
    assert await api.json("/api/whoami") == {"name": "guest", "tags": ["administrator"]}
    assert await api.json("/api/cluster-name") == {"name": "warrenmq@testhost"}
    assert (await api.put("/api/cluster-name", json={"name": "renamed"})).status == 204
    assert (await api.json("/api/overview"))["cluster_name"] == "renamed"
    assert await api.json("/api/extensions") == [{"javascript": "dispatcher.js"}]


async def test_nodes_report_this_process(api: Api) -> None:
    nodes = await api.json("/api/nodes")
    assert [node["name"] for node in nodes] == ["warrenmq@testhost"]
    node = await api.json("/api/nodes/warrenmq@testhost")
    assert node["running"] is True
    assert node["mem_used"] > 0
    assert node["fd_used"] > 0
    assert node["processors"] >= 1
    assert (await api.get("/api/nodes/other@host")).status == 404


async def test_connections_channels_and_consumers_of_a_real_client(api: Api) -> None:
    connection = await aio_pika.connect(api.amqp_url, client_properties={"connection_name": "probe"})
    try:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=7)
        queue = await channel.declare_queue("cq")

        async def ignore(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            return None

        await queue.consume(ignore, consumer_tag="ctag")
        [row] = await api.json("/api/connections")
        assert (row["user_provided_name"], row["user"], row["vhost"], row["channels"]) == (
            "probe",
            "guest",
            "/",
            1,
        )
        assert row["protocol"] == "AMQP 0-9-1"
        assert row["peer_host"] == "127.0.0.1"
        name = row["name"]
        assert (await api.json(f"/api/connections/{quote(name, safe='')}"))["name"] == name
        [ch] = await api.json("/api/channels")
        assert (ch["name"], ch["number"], ch["prefetch_count"], ch["consumer_count"]) == (
            f"{name} (1)",
            1,
            7,
            1,
        )
        assert ch["connection_details"]["name"] == name
        assert await api.json(f"/api/connections/{quote(name, safe='')}/channels") == [ch]
        assert await api.json("/api/vhosts/%2F/channels") == [ch]
        [consumer] = await api.json("/api/consumers/%2F")
        assert (consumer["consumer_tag"], consumer["queue"], consumer["ack_required"]) == (
            "ctag",
            {"name": "cq", "vhost": "/"},
            True,
        )
        assert (await api.json("/api/queues/%2F/cq"))["consumers"] == 1
        assert [c["name"] for c in await api.json("/api/connections/username/guest")] == [name]
        closed = await api.delete(f"/api/connections/{quote(name, safe='')}", headers={"X-Reason": "bye"})
        assert closed.status == 204
        for _ in range(200):
            if not await api.json("/api/connections"):
                break
            await asyncio.sleep(0.01)
        assert await api.json("/api/connections") == []
    finally:
        await connection.close()


async def test_definitions_round_trip_users_permissions_and_vhost_metadata(api: Api) -> None:
    exported = {
        "rabbit_version": "3.10.8",
        "users": [
            {
                "name": "imported",
                "password_hash": RABBITMQ_GUEST_HASH,
                "hashing_algorithm": "rabbit_password_hashing_sha256",
                "tags": ["management"],
                "limits": {},
            }
        ],
        "vhosts": [{"name": "dv", "metadata": {"description": "from rabbit", "tags": ["t"]}}],
        "permissions": [{"user": "imported", "vhost": "dv", "configure": "^x", "write": ".*", "read": ".*"}],
        "topic_permissions": [
            {"user": "imported", "vhost": "dv", "exchange": "amq.topic", "write": "^a", "read": ""}
        ],
        "parameters": [],
        "policies": [],
        "global_parameters": [{"name": "internal_cluster_id", "value": "rabbitmq-cluster-id-x"}],
        "queues": [{"name": "dq", "vhost": "dv", "durable": True, "auto_delete": False, "arguments": {}}],
        "exchanges": [],
        "bindings": [],
    }
    assert (await api.post("/api/definitions", json=exported)).status == 204
    assert await api.json("/api/whoami", user=("imported", "guest")) == {
        "name": "imported",
        "tags": ["management"],
    }
    assert [q["name"] for q in await api.json("/api/queues", user=("imported", "guest"))] == ["dq"]
    out = await api.json("/api/definitions")
    assert {
        "name": "imported",
        "password_hash": RABBITMQ_GUEST_HASH,
        "hashing_algorithm": "rabbit_password_hashing_sha256",
        "tags": ["management"],
        "limits": {},
    } in out["users"]
    assert {"name": "dv", "limits": [], "metadata": {"description": "from rabbit", "tags": ["t"]}} in out[
        "vhosts"
    ]
    assert {"user": "imported", "vhost": "dv", "configure": "^x", "write": ".*", "read": ".*"} in out[
        "permissions"
    ]
    assert out["topic_permissions"] == [exported["topic_permissions"][0]]
    per_vhost = await api.json("/api/definitions/dv")
    assert per_vhost["queues"] == [{"name": "dq", "durable": True, "auto_delete": False, "arguments": {}}]
    bad = await api.post(
        "/api/definitions",
        json={
            "permissions": [{"user": "imported", "vhost": "dv", "configure": "(", "write": "", "read": ""}]
        },
    )
    assert bad.status == 400
    assert api.server.broker.access.permissions[("imported", "dv")].configure == "^x"


async def test_health_checks_fail_with_503_when_their_condition_fails(api: Api) -> None:
    assert await api.json("/api/health/checks/alarms") == {"status": "ok"}
    assert await api.json("/api/health/checks/virtual-hosts") == {"status": "ok"}
    assert await api.json(f"/api/health/checks/port-listener/{api.server.port}") == {
        "status": "ok",
        "port": api.server.port,
    }
    missing = await api.get("/api/health/checks/port-listener/1")
    assert missing.status == 503
    assert await missing.json() == {
        "status": "failed",
        "reason": "No active listener",
        "missing": 1,
        "ports": [api.context.http_port, api.server.port],
    }
    assert await api.json("/api/health/checks/protocol-listener/amqp091") == {
        "status": "ok",
        "protocol": "amqp",
    }
    assert (await api.get("/api/health/checks/protocol-listener/stomp")).status == 503
    assert (await api.json("/api/health/checks/node-is-quorum-critical"))["status"] == "ok"
    assert (await api.get("/api/health/checks/nope")).status == 404


async def test_the_older_node_health_check_reports_alarms(api: Api) -> None:
    node = api.context.node
    assert await api.json("/api/healthchecks/node") == {"status": "ok"}
    assert await api.json(f"/api/healthchecks/node/{node}") == {"status": "ok"}
    assert (await api.get("/api/healthchecks/node/nosuch@nowhere")).status == 404
    # The memory monitor samples every 50 ms and sets the alarm from what it reads, so the alarm is raised its
    # way: a watermark any RSS is past, until the monitor's next sample has raised it.
    alarms = api.server.alarms
    limit = alarms.mem_limit
    alarms.mem_limit = 1
    try:
        failed = await _node_check_once(api, 503)
        reason = f"resource alarm(s) in effect:[{{{{resource_limit,memory,{node}}},[]}}]"
        assert await failed.json() == {"status": "failed", "reason": reason}
    finally:
        alarms.mem_limit = limit
    assert (await _node_check_once(api, 200)).status == 200  # cleared by the monitor's next sample


async def _node_check_once(api: Api, status: int) -> aiohttp.ClientResponse:
    """/api/healthchecks/node once it answers ``status`` (the alarm state follows the monitor's samples)."""
    for _ in range(1500):  # a bound for a hang (30 s), not a timing: the monitor samples every 50 ms
        response = await api.get("/api/healthchecks/node")
        if response.status == status:
            return response
        await asyncio.sleep(0.02)
    raise AssertionError(f"/api/healthchecks/node never answered {status}")


async def test_aliveness_test_publishes_and_gets_a_message(api: Api) -> None:
    assert await api.json("/api/aliveness-test/%2F") == {"status": "ok"}
    assert "aliveness-test" in api.server.broker.vhosts["/"].queues
    assert (await api.get("/api/aliveness-test/nosuch")).status == 404
