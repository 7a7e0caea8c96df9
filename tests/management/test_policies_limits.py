"""Policies, operator policies, parameters, global parameters, vhost and user limits through aiohttp's test
client: statuses, bodies and reasons as RabbitMQ 3.10.8 answers them, the tag gates, the policy keys on
queue and exchange objects, and definitions carrying all of it both ways."""

from __future__ import annotations

from typing import Any

from tests.management.conftest import Api

QUEUE_POLICY = {"pattern": "^q", "definition": {"max-length": 7}, "priority": 1, "apply-to": "queues"}


async def _status_and_body(response: Any) -> tuple[int, Any]:
    text = await response.text()
    return response.status, (await response.json() if text else None)


async def test_policy_crud_and_listing_order(api: Api) -> None:
    assert (await api.put("/api/policies/%2F/pb", json={**QUEUE_POLICY, "priority": 1})).status == 201
    assert (await api.put("/api/policies/%2F/pa", json={**QUEUE_POLICY, "priority": 1})).status == 201
    assert (await api.put("/api/policies/%2F/low", json={**QUEUE_POLICY, "priority": 0})).status == 201
    assert (await api.put("/api/policies/%2F/pa", json={**QUEUE_POLICY, "priority": 1})).status == 204
    listed = await api.json("/api/policies")
    assert [p["name"] for p in listed] == ["low", "pa", "pb"]  # priority ascending, then name
    assert listed[1] == {
        "vhost": "/",
        "name": "pa",
        "pattern": "^q",
        "apply-to": "queues",
        "definition": {"max-length": 7},
        "priority": 1,
    }
    assert await api.json("/api/policies/%2F") == listed
    assert (await api.json("/api/policies/%2F/pa"))["name"] == "pa"
    assert (await api.delete("/api/policies/%2F/pa")).status == 204
    assert (await api.delete("/api/policies/%2F/pa")).status == 404
    assert (await api.get("/api/policies/%2F/pa")).status == 404


async def test_defaults_are_priority_0_and_apply_to_all(api: Api) -> None:
    assert (
        await api.put("/api/policies/%2F/d", json={"pattern": "x", "definition": {"expires": 5}})
    ).status == 201
    policy = await api.json("/api/policies/%2F/d")
    assert (policy["priority"], policy["apply-to"]) == (0, "all")


async def test_invalid_policies_are_refused_with_rabbitmqs_bodies(api: Api) -> None:
    cases = [
        (
            {"pattern": "(", "definition": {"max-length": 1}},
            'Validation failed\n\npattern should be regular expression but is invalid: {"missing )",1}\n',
        ),
        ({"definition": {"max-length": 1}}, "[{key_missing,pattern}]"),
        (
            {"pattern": "a", "definition": {"foo": 1}},
            'Validation failed\n\n[{&lt;&lt;"foo"&gt;&gt;,1}] are not recognised policy settings\n',
        ),
        (
            {"pattern": "a", "definition": {"max-length": "x"}},
            'Validation failed\n\n&lt;&lt;"x"&gt;&gt; is not a valid maximum length\n',
        ),
        ({"pattern": "a", "definition": {}}, "Validation failed\n\nno policy provided\n"),
    ]
    for body, reason in cases:
        assert await _status_and_body(await api.put("/api/policies/%2F/bad", json=body)) == (
            400,
            {"error": "bad_request", "reason": reason},
        )
    assert await api.json("/api/policies") == []
    missing_vhost = await api.put("/api/policies/nov/p", json=QUEUE_POLICY)
    assert await _status_and_body(missing_vhost) == (404, {"error": "not_found", "reason": "vhost_not_found"})
    operator = await api.put(
        "/api/operator-policies/%2F/op", json={"pattern": "a", "definition": {"overflow": "drop-head"}}
    )
    assert await _status_and_body(operator) == (
        400,
        {
            "error": "bad_request",
            "reason": 'Validation failed\n\n[{<<"overflow">>,<<"drop-head">>}]'
            " are not recognised policy settings\n",
        },
    )


async def test_queue_and_exchange_objects_show_the_policies_that_apply(api: Api) -> None:
    await api.put("/api/queues/%2F/q1", json={"arguments": {"x-max-length": 3}})
    await api.put("/api/exchanges/%2F/x1", json={"type": "direct"})
    queue = await api.json("/api/queues/%2F/q1")
    assert (queue["policy"], queue["operator_policy"], queue["effective_policy_definition"]) == (
        None,
        None,
        {},
    )
    assert "policy" not in await api.json("/api/exchanges/%2F/x1")  # absent while none applies, as RabbitMQ
    await api.put("/api/policies/%2F/p", json={"pattern": "1$", "definition": {"max-length": 7}})
    await api.put(
        "/api/operator-policies/%2F/op",
        json={"pattern": "^q", "definition": {"max-length": 6, "message-ttl": 1000}, "apply-to": "queues"},
    )
    queue = await api.json("/api/queues/%2F/q1")
    assert (queue["policy"], queue["operator_policy"]) == ("p", "op")
    assert queue["effective_policy_definition"] == {"max-length": 6, "message-ttl": 1000}
    assert (await api.json("/api/exchanges/%2F/x1"))["policy"] == "p"
    settings = api.server.broker.vhosts["/"].queues["q1"].features.settings  # type: ignore[union-attr]
    assert (settings.max_length, settings.message_ttl) == (3, 1000)  # the argument's 3 is smaller


async def test_operator_policies_need_administrator_and_policies_policymaker(api: Api) -> None:
    await api.put("/api/users/pm", json={"password": "p", "tags": "policymaker"})
    await api.put("/api/users/mg", json={"password": "p", "tags": "management"})
    for user in ("pm", "mg"):
        await api.put(f"/api/permissions/%2F/{user}", json={"configure": ".*", "write": ".*", "read": ".*"})
    assert (await api.put("/api/policies/%2F/p", user=("pm", "p"), json=QUEUE_POLICY)).status == 201
    refused = await api.put("/api/policies/%2F/p2", user=("mg", "p"), json=QUEUE_POLICY)
    assert await _status_and_body(refused) == (
        401,
        {"error": "not_authorised", "reason": "User not authorised to access object"},
    )
    operator = await api.put("/api/operator-policies/%2F/op", user=("pm", "p"), json=QUEUE_POLICY)
    assert await _status_and_body(operator) == (
        401,
        {"error": "not_authorised", "reason": "Not administrator user"},
    )


async def test_vhost_limits(api: Api) -> None:
    assert await api.json("/api/vhost-limits") == []
    assert (await api.put("/api/vhost-limits/%2F/max-connections", json={"value": 5})).status == 204
    assert (await api.put("/api/vhost-limits/%2F/max-queues", json={"value": -1})).status == 204
    assert await api.json("/api/vhost-limits") == [
        {"vhost": "/", "value": {"max-queues": -1, "max-connections": 5}}
    ]
    bad = await api.put("/api/vhost-limits/%2F/max-queues", json={"value": "x"})
    assert await _status_and_body(bad) == (
        400,
        {
            "error": "bad_request",
            "reason": 'Validation failed\n\nmax-queues should be a number, actually was <<"x">>\n',
        },
    )
    unknown = await api.put("/api/vhost-limits/%2F/max-foo", json={"value": 3})
    assert (await unknown.json())[
        "reason"
    ] == 'Validation failed\n\nUnrecognised terms [{<<"max-foo">>,3}] in limits\n'
    assert (await api.get("/api/vhost-limits/%2F/max-queues")).status == 405
    for name in ("max-queues", "max-connections", "max-connections"):
        assert (await api.delete(f"/api/vhost-limits/%2F/{name}")).status == 204
    assert await api.json("/api/vhost-limits") == [{"vhost": "/", "value": []}]
    assert await api.json("/api/vhost-limits/%2F") == []
    assert (await api.get("/api/vhost-limits/nov")).status == 404


async def test_user_limits(api: Api) -> None:
    assert (await api.put("/api/user-limits/guest/max-connections", json={"value": 5})).status == 204
    assert (await api.put("/api/user-limits/guest/max-channels", json={"value": -1})).status == 204
    expected = [{"user": "guest", "value": {"max-channels": -1, "max-connections": 5}}]
    assert await api.json("/api/user-limits") == expected
    assert await api.json("/api/user-limits/guest") == expected
    assert (await api.json("/api/users/guest"))["limits"] == {"max-channels": -1, "max-connections": 5}
    nouser = await api.put("/api/user-limits/nouser/max-channels", json={"value": 1})
    assert await _status_and_body(nouser) == (
        400,
        {"error": "bad_request", "reason": ["no_such_user", "nouser"]},
    )
    bad = await api.put("/api/user-limits/guest/max-channels", json={"value": "a"})
    assert (await bad.json())["reason"] == 'max-channels should be a number, actually was <<"a">>'
    assert (await api.get("/api/user-limits/nouser")).status == 404
    assert (await api.delete("/api/user-limits/guest/max-channels")).status == 204
    assert (await api.delete("/api/user-limits/guest/max-channels")).status == 204


async def test_parameters_and_global_parameters(api: Api) -> None:
    await api.put("/api/vhost-limits/%2F/max-queues", json={"value": 10})
    await api.put("/api/operator-policies/%2F/op", json={"pattern": "^t", "definition": {"max-length": 6}})
    await api.put("/api/policies/%2F/p", json=QUEUE_POLICY)
    rows = await api.json("/api/parameters")
    assert [(r["component"], r["name"]) for r in rows] == [
        ("vhost-limits", "limits"),
        ("operator_policy", "op"),
    ]
    assert rows[1] == {
        "value": {"pattern": "^t", "definition": {"max-length": 6}, "priority": 0, "apply-to": "all"},
        "vhost": "/",
        "component": "operator_policy",
        "name": "op",
    }
    assert [r["name"] for r in await api.json("/api/parameters/policy")] == ["p"]
    assert (await api.json("/api/parameters/policy/%2F/p"))["component"] == "policy"
    federation = await api.put(
        "/api/parameters/federation-upstream/%2F/up", json={"value": {"uri": "amqp://"}}
    )
    assert await _status_and_body(federation) == (
        400,
        {"error": "bad_request", "reason": "Validation failed\n\ncomponent federation-upstream not found\n"},
    )
    assert (await api.delete("/api/parameters/vhost-limits/%2F/limits")).status == 204
    assert await api.json("/api/vhost-limits") == []
    assert (await api.put("/api/global-parameters/foo", json={"value": {"a": 1}})).status == 201
    assert await api.json("/api/global-parameters/foo") == {"value": {"a": 1}, "name": "foo"}
    names = [row["name"] for row in await api.json("/api/global-parameters")]
    assert names == ["foo", "internal_cluster_id"]
    assert (await api.delete("/api/global-parameters/foo")).status == 204
    assert (await api.delete("/api/global-parameters/foo")).status == 404


async def test_definitions_carry_policies_parameters_and_limits_both_ways(api: Api) -> None:
    await api.put("/api/policies/%2F/p", json=QUEUE_POLICY)
    await api.put("/api/operator-policies/%2F/op", json={"pattern": "^t", "definition": {"max-length": 6}})
    await api.put("/api/vhost-limits/%2F/max-queues", json={"value": 10})
    await api.put("/api/user-limits/guest/max-channels", json={"value": 9})
    await api.put("/api/global-parameters/foo", json={"value": "bar"})
    exported = await api.json("/api/definitions")
    assert exported["policies"] == [
        {
            "vhost": "/",
            "name": "p",
            "pattern": "^q",
            "apply-to": "queues",
            "definition": {"max-length": 7},
            "priority": 1,
        }
    ]
    assert {(p["component"], p["name"]) for p in exported["parameters"]} == {
        ("vhost-limits", "limits"),
        ("operator_policy", "op"),
    }
    assert {"name": "foo", "value": "bar"} in exported["global_parameters"]
    assert [v["limits"] for v in exported["vhosts"] if v["name"] == "/"] == [{"max-queues": 10}]
    for path in (
        "/api/policies/%2F/p",
        "/api/operator-policies/%2F/op",
        "/api/vhost-limits/%2F/max-queues",
        "/api/user-limits/guest/max-channels",
        "/api/global-parameters/foo",
    ):
        await api.delete(path)
    assert (await api.post("/api/definitions", json=exported)).status == 204
    assert [p["name"] for p in await api.json("/api/policies")] == ["p"]
    assert [p["name"] for p in await api.json("/api/operator-policies")] == ["op"]
    assert await api.json("/api/vhost-limits/%2F") == [{"vhost": "/", "value": {"max-queues": 10}}]
    assert (await api.json("/api/users/guest"))["limits"] == {"max-channels": 9}
    assert (await api.json("/api/global-parameters/foo"))["value"] == "bar"
    bad = {"policies": [{"vhost": "/", "name": "x", "pattern": "(", "definition": {"max-length": 1}}]}
    response = await api.post("/api/definitions", json=bad)
    assert response.status == 400
    assert "missing )" in (await response.json())["reason"]
