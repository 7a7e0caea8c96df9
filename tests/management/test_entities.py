"""Queues, exchanges, bindings, publish, get and purge through aiohttp's test client, with the statuses,
bodies and Location headers RabbitMQ 3.10.8 answers."""

from __future__ import annotations

import base64

from tests.management.conftest import Api


async def test_queue_put_get_delete_with_if_empty_and_if_unused(api: Api) -> None:
    assert (await api.put("/api/queues/%2F/q1", json={"arguments": {"x-max-length": 5}})).status == 201
    assert (await api.put("/api/queues/%2F/q1", json={"arguments": {"x-max-length": 5}})).status == 204
    inequivalent = await api.put(
        "/api/queues/%2F/q1", json={"durable": True, "arguments": {"x-max-length": 5}}
    )
    assert inequivalent.status == 400
    assert (await inequivalent.json())["reason"] == (
        "inequivalent arg 'durable' for queue 'q1' in vhost '/': received 'true' but current is 'false'"
    )
    queue = await api.json("/api/queues/%2F/q1")
    assert (queue["durable"], queue["arguments"], queue["type"], queue["node"]) == (
        False,
        {"x-max-length": 5},
        "classic",
        "warrenmq@testhost",
    )
    await api.post(
        "/api/exchanges/%2F/amq.default/publish",
        json={"properties": {}, "routing_key": "q1", "payload": "x", "payload_encoding": "string"},
    )
    not_empty = await api.delete("/api/queues/%2F/q1?if-empty=true")
    assert not_empty.status == 400
    assert "q1" in api.server.broker.vhosts["/"].queues
    assert (await api.delete("/api/queues/%2F/q1")).status == 204
    assert (await api.delete("/api/queues/%2F/q1")).status == 404


async def test_queue_objects_carry_rabbitmqs_keys(api: Api) -> None:
    await api.put("/api/queues/%2F/keys", json={})
    queue = await api.json("/api/queues/%2F/keys")
    expected = {
        "arguments", "auto_delete", "backing_queue_status", "consumer_capacity", "consumer_utilisation",
        "consumers", "durable", "effective_policy_definition", "exclusive", "exclusive_consumer_tag",
        "garbage_collection", "head_message_timestamp", "idle_since", "memory", "message_bytes",
        "message_bytes_paged_out", "message_bytes_persistent", "message_bytes_ram", "message_bytes_ready",
        "message_bytes_unacknowledged", "messages", "messages_details", "messages_paged_out",
        "messages_persistent", "messages_ram", "messages_ready", "messages_ready_details",
        "messages_ready_ram", "messages_unacknowledged", "messages_unacknowledged_details",
        "messages_unacknowledged_ram", "name", "node", "operator_policy", "policy", "recoverable_slaves",
        "reductions", "reductions_details", "single_active_consumer_tag", "state", "type", "vhost",
        "consumer_details", "deliveries", "incoming",
    }  # fmt: skip
    assert expected <= set(queue)


async def test_bad_queue_input_is_refused_before_anything_is_created(api: Api) -> None:
    long_name = await api.put(f"/api/queues/%2F/{'l' * 300}", json={})
    assert (long_name.status, await long_name.json()) == (
        400,
        {"error": "bad_request", "reason": "queue should be less than 255 bytes, actually was 300\n"},
    )
    not_boolean = await api.put("/api/queues/%2F/b", json={"auto_delete": "yes"})
    assert await not_boolean.json() == {"error": "bad_request", "reason": ["not_boolean", "yes"]}
    assert api.server.broker.vhosts["/"].queues == {}


async def test_exchange_put_delete_and_the_default_exchange(api: Api) -> None:
    assert (await api.put("/api/exchanges/%2F/ex1", json={})).status == 201
    assert (await api.json("/api/exchanges/%2F/ex1"))["type"] == "direct"
    clash = await api.put("/api/exchanges/%2F/ex1", json={"type": "fanout"})
    assert (clash.status, await clash.json()) == (
        400,
        {
            "error": "bad_request",
            "reason": (
                "inequivalent arg 'type' for exchange 'ex1' in vhost '/': "
                "received 'fanout' but current is 'direct'"
            ),
        },
    )
    unknown = await api.put("/api/exchanges/%2F/ex2", json={"type": "nosuch"})
    assert (unknown.status, (await unknown.json())["reason"]) == (400, "unknown exchange type 'nosuch'")
    for method, path in (
        ("DELETE", "/api/exchanges/%2F/amq.direct"),
        ("DELETE", "/api/exchanges/%2F/amq.default"),
        ("PUT", "/api/exchanges/%2F/amq.foo"),
    ):
        response = await api.request(method, path, json={"type": "fanout"})
        assert (response.status, await response.json()) == (
            401,
            {"error": "not_authorised", "reason": "Access refused."},
        )
    assert (await api.delete("/api/exchanges/%2F/nosuch")).status == 404
    await api.put("/api/queues/%2F/bq", json={})
    await api.post("/api/bindings/%2F/e/ex1/q/bq", json={"routing_key": "k"})
    in_use = await api.delete("/api/exchanges/%2F/ex1?if-unused=true")
    assert (in_use.status, (await in_use.json())["reason"]) == (400, "exchange 'ex1' in vhost '/' in use")
    assert (await api.delete("/api/exchanges/%2F/ex1")).status == 204


async def test_bindings_post_with_location_then_get_and_delete_by_properties_key(api: Api) -> None:
    await api.put("/api/exchanges/%2F/ex1", json={"type": "direct"})
    await api.put("/api/queues/%2F/q%20sp%23%C3%A9", json={})
    base = "/api/bindings/%2F/e/ex1/q/q%20sp%23%C3%A9"
    created = await api.post(base, json={"routing_key": "k2"})
    assert (created.status, created.headers["Location"]) == (201, "q+sp%23%C3%A9/k2")
    with_args = await api.post(base, json={"routing_key": "k#1", "arguments": {"x": 1}})
    # RabbitMQ's args_hash: base64url of erlang:phash2([{<<"x">>,long,1}], 1 bsl 32) (JSON integers are long)
    assert with_args.headers["Location"] == "q+sp%23%C3%A9/k%25231~9nmLZQ"
    rows = await api.json(base)
    assert [(row["routing_key"], row["properties_key"]) for row in rows] == [
        ("k#1", "k%231~9nmLZQ"),  # sorted by routing key, as every RabbitMQ binding listing
        ("k2", "k2"),
    ]
    assert await api.json(base + "/k2") == {
        "source": "ex1",
        "vhost": "/",
        "destination": "q sp#é",
        "destination_type": "queue",
        "routing_key": "k2",
        "arguments": {},
        "properties_key": "k2",
    }
    props = rows[0]["properties_key"]
    assert (await api.get(f"{base}/{props.replace('%', '%25')}")).status == 200  # quoted, as rabbitmqadmin
    assert (await api.get(f"{base}/{props}")).status == 200  # unquoted, as pyrabbit2
    assert (await api.get(base + "/nope")).status == 404
    assert (await api.delete(base + "/k2")).status == 204
    assert (await api.delete(base + "/k2")).status == 404
    queue_bindings = await api.json("/api/queues/%2F/q%20sp%23%C3%A9/bindings")
    assert next((b["source"], b["properties_key"]) for b in queue_bindings) == ("", "q+sp%23%C3%A9")
    assert len(await api.json("/api/exchanges/%2F/ex1/bindings/source")) == 1


async def test_binding_errors(api: Api) -> None:
    await api.put("/api/queues/%2F/pq", json={})
    missing_exchange = await api.post("/api/bindings/%2F/e/nosuch/q/pq", json={"routing_key": "k"})
    assert (missing_exchange.status, await missing_exchange.json()) == (
        404,
        {"error": "not_found", "reason": "no exchange 'nosuch' in vhost '/'"},
    )
    missing_queue = await api.post("/api/bindings/%2F/e/amq.direct/q/nosuch", json={})
    assert (await missing_queue.json())["reason"] == "no queue 'nosuch' in vhost '/'"
    for source in ("", "amq.default"):
        refused = await api.post(f"/api/bindings/%2F/e/{source}/q/pq", json={"routing_key": "k"})
        assert (refused.status, (await refused.json())["reason"]) == (401, "Access refused.")


async def test_exchange_to_exchange_bindings(api: Api) -> None:
    await api.put("/api/exchanges/%2F/src", json={"type": "fanout"})
    created = await api.post("/api/bindings/%2F/e/src/e/amq.direct", json={"routing_key": "z"})
    assert (created.status, created.headers["Location"]) == (201, "amq.direct/z")
    rows = await api.json("/api/exchanges/%2F/amq.direct/bindings/destination")
    assert [(r["source"], r["destination_type"], r["routing_key"]) for r in rows] == [
        ("src", "exchange", "z")
    ]
    assert (await api.delete("/api/bindings/%2F/e/src/e/amq.direct/z")).status == 204
    assert await api.json("/api/exchanges/%2F/amq.direct/bindings/destination") == []


async def test_publish_then_get_with_each_ackmode_and_encoding(api: Api) -> None:
    await api.put("/api/queues/%2F/gq", json={})
    publish = {
        "properties": {"headers": {"a": 1}, "delivery_mode": 2, "content_type": "text/plain"},
        "routing_key": "gq",
        "payload": "hello",
        "payload_encoding": "string",
    }
    routed = await api.post("/api/exchanges/%2F/amq.default/publish", json=publish)
    assert await routed.json() == {"routed": True}
    binary = {
        "properties": {},
        "routing_key": "gq",
        "payload": base64.b64encode(b"\xff\x00").decode(),
        "payload_encoding": "base64",
    }
    await api.post("/api/exchanges/%2F/amq.default/publish", json=binary)
    get = "/api/queues/%2F/gq/get"
    peek = await (
        await api.post(
            get, json={"count": 5, "ackmode": "ack_requeue_true", "encoding": "auto", "truncate": 3}
        )
    ).json()
    assert peek[0] == {
        "exchange": "",
        "message_count": 1,
        "payload": "hel",
        "payload_bytes": 5,
        "payload_encoding": "string",
        "properties": {"content_type": "text/plain", "delivery_mode": 2, "headers": {"a": 1}},
        "redelivered": False,
        "routing_key": "gq",
    }
    assert (peek[1]["payload"], peek[1]["payload_encoding"]) == ("/wA=", "base64")
    again = await (
        await api.post(get, json={"count": 1, "ackmode": "reject_requeue_true", "encoding": "base64"})
    ).json()
    assert (again[0]["payload"], again[0]["redelivered"]) == ("aGVsbG8=", True)
    taken = await (
        await api.post(get, json={"count": 5, "ackmode": "ack_requeue_false", "encoding": "auto"})
    ).json()
    assert len(taken) == 2
    assert (
        await (
            await api.post(get, json={"count": 5, "ackmode": "ack_requeue_false", "encoding": "auto"})
        ).json()
        == []
    )
    missing = await api.post(get, json={"count": 5, "encoding": "auto"})
    assert await missing.json() == {"error": "bad_request", "reason": "[{key_missing,ackmode}]"}


async def test_publish_errors_and_unroutable(api: Api) -> None:
    await api.put("/api/exchanges/%2F/lonely", json={"type": "direct"})
    body = {"properties": {}, "routing_key": "x", "payload": "hi", "payload_encoding": "string"}
    assert await (await api.post("/api/exchanges/%2F/lonely/publish", json=body)).json() == {"routed": False}
    missing = await api.post("/api/exchanges/%2F/nosuch/publish", json=body)
    assert (missing.status, await missing.json()) == (
        400,
        {"error": "bad_request", "reason": "404 NOT_FOUND - no exchange 'nosuch' in vhost '/'"},
    )
    bad_ttl = {**body, "properties": {"expiration": "soon"}}
    refused = await api.post("/api/exchanges/%2F/lonely/publish", json=bad_ttl)
    assert await refused.json() == {
        "error": "bad_request",
        "reason": "406 PRECONDITION_FAILED - invalid expiration 'soon': no_integer",
    }
    no_encoding = await api.post(
        "/api/exchanges/%2F/lonely/publish", json={"properties": {}, "routing_key": "x", "payload": "x"}
    )
    assert await no_encoding.json() == {"error": "bad_request", "reason": "[{key_missing,payload_encoding}]"}


async def test_delete_contents_purges(api: Api) -> None:
    await api.put("/api/queues/%2F/pq", json={})
    body = {"properties": {}, "routing_key": "pq", "payload": "x", "payload_encoding": "string"}
    for _ in range(3):
        await api.post("/api/exchanges/%2F/amq.default/publish", json=body)
    assert (await api.json("/api/queues/%2F/pq"))["messages"] == 3
    assert (await api.delete("/api/queues/%2F/pq/contents")).status == 204
    assert (await api.json("/api/queues/%2F/pq"))["messages"] == 0
    assert (await api.delete("/api/queues/%2F/nosuch/contents")).status == 404
