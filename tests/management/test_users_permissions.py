"""Users, permissions, topic permissions and the tag gates, through aiohttp's test client (statuses, bodies
and reasons as RabbitMQ 3.10.8 answers them)."""

from __future__ import annotations

from tests.management.conftest import Api
from tests.management.test_access import RABBITMQ_GUEST_HASH


async def test_user_crud_with_password_and_tags(api: Api) -> None:
    assert (
        await api.put("/api/users/alice", json={"password": "p", "tags": "management,monitoring"})
    ).status == 201
    assert (await api.put("/api/users/alice", json={"password": "p2", "tags": ["management"]})).status == 204
    user = await api.json("/api/users/alice")
    assert set(user) == {"name", "password_hash", "hashing_algorithm", "tags", "limits"}
    assert (user["name"], user["tags"], user["limits"]) == ("alice", ["management"], {})
    assert user["hashing_algorithm"] == "rabbit_password_hashing_sha256"
    assert api.server.broker.authenticate("alice", "p2")
    assert (await api.delete("/api/users/alice")).status == 204
    assert (await api.delete("/api/users/alice")).status == 404
    assert (await api.get("/api/users/alice")).status == 404


async def test_put_user_without_tags_is_refused(api: Api) -> None:
    response = await api.put("/api/users/notags", json={"password": "x"})
    assert (response.status, await response.json()) == (
        400,
        {"error": "bad_request", "reason": "tags_not_present"},
    )
    assert (await api.get("/api/users/notags")).status == 404


async def test_a_rabbitmq_password_hash_logs_in_to_the_api(api: Api) -> None:
    body = {
        "password_hash": RABBITMQ_GUEST_HASH,
        "hashing_algorithm": "rabbit_password_hashing_sha256",
        "tags": ["administrator"],
    }
    assert (await api.put("/api/users/hashed", json=body)).status == 201
    assert await api.json("/api/whoami", user=("hashed", "guest")) == {
        "name": "hashed",
        "tags": ["administrator"],
    }


async def test_bulk_delete_stops_at_the_first_missing_user(api: Api) -> None:
    for name in ("a", "b"):
        await api.put(f"/api/users/{name}", json={"password": "p", "tags": ""})
    response = await api.post("/api/users/bulk-delete", json={"users": ["a", "nosuch", "b"]})
    assert (response.status, await response.json()) == (
        400,
        {"error": "bad_request", "reason": ["no_such_user", "nosuch"]},
    )
    names = [user["name"] for user in await api.json("/api/users")]
    assert names == ["b", "guest"]
    assert (await api.post("/api/users/bulk-delete", json={"users": ["b"]})).status == 204


async def test_users_without_permissions(api: Api) -> None:
    await api.put("/api/users/lonely", json={"password": "p", "tags": ""})
    assert [user["name"] for user in await api.json("/api/users/without-permissions")] == ["lonely"]


async def test_permission_crud_and_listings(api: Api) -> None:
    await api.put("/api/users/u", json={"password": "p", "tags": "management"})
    assert (
        await api.put("/api/permissions/%2F/u", json={"configure": "^a", "write": ".*", "read": ".*"})
    ).status == 201
    assert (
        await api.put("/api/permissions/%2F/u", json={"configure": "^b", "write": ".*", "read": ".*"})
    ).status == 204
    expected = {"user": "u", "vhost": "/", "configure": "^b", "write": ".*", "read": ".*"}
    assert await api.json("/api/permissions/%2F/u") == expected
    assert expected in await api.json("/api/permissions")
    assert await api.json("/api/users/u/permissions") == [expected]
    assert expected in await api.json("/api/vhosts/%2F/permissions")
    assert (await api.delete("/api/permissions/%2F/u")).status == 204
    assert (await api.get("/api/permissions/%2F/u")).status == 404


async def test_bad_permissions_are_refused_and_change_nothing(api: Api) -> None:
    await api.put("/api/users/u", json={"password": "p", "tags": ""})
    await api.put("/api/permissions/%2F/u", json={"configure": ".*", "write": ".*", "read": ".*"})
    bad_regex = await api.put("/api/permissions/%2F/u", json={"configure": "(", "write": ".*", "read": ".*"})
    assert bad_regex.status == 400
    assert (await bad_regex.json())["reason"][0] == "invalid_regexp"
    assert (await api.json("/api/permissions/%2F/u"))["configure"] == ".*"
    for path in ("/api/permissions/%2F/nosuch", "/api/permissions/nosuchvh/u"):
        response = await api.put(path, json={"configure": ".*", "write": ".*", "read": ".*"})
        assert (response.status, await response.json()) == (
            400,
            {"error": "bad_request", "reason": "vhost_or_user_not_found"},
        )


async def test_topic_permissions_crud(api: Api) -> None:
    await api.put("/api/users/u", json={"password": "p", "tags": ""})
    body = {"exchange": "amq.topic", "write": "^a", "read": ".*"}
    assert (await api.put("/api/topic-permissions/%2F/u", json=body)).status == 201
    expected = [{"user": "u", "vhost": "/", "exchange": "amq.topic", "write": "^a", "read": ".*"}]
    assert await api.json("/api/topic-permissions/%2F/u") == expected
    assert await api.json("/api/users/u/topic-permissions") == expected
    assert await api.json("/api/vhosts/%2F/topic-permissions") == expected
    assert await api.json("/api/topic-permissions") == expected
    assert (await api.delete("/api/topic-permissions/%2F/u")).status == 204
    assert (await api.get("/api/topic-permissions/%2F/u")).status == 404


async def test_tag_gates_answer_rabbitmqs_reasons(api: Api) -> None:
    for name, tags in (("none", ""), ("mgmt", "management"), ("mon", "monitoring"), ("pm", "policymaker")):
        await api.put(f"/api/users/{name}", json={"password": "p", "tags": tags})

    async def refused(path: str, user: str) -> object:
        response = await api.get(path, user=(user, "p"))
        assert response.status == 401, (path, user, response.status)
        return (await response.json())["reason"]

    assert await refused("/api/overview", "none") == "Not management user"
    assert await refused("/api/users", "mgmt") == "Not administrator user"
    assert await refused("/api/users", "mon") == "Not administrator user"
    assert await refused("/api/nodes", "mgmt") == "Not monitor user"
    assert await refused("/api/queues/%2F", "mgmt") == "User not authorised to access virtual host"
    assert await refused("/api/aliveness-test/%2F", "mgmt") == "User not authorised to access virtual host"
    assert (await api.get("/api/nodes", user=("mon", "p"))).status == 200
    assert await api.json("/api/whoami", user=("mgmt", "p")) == {"name": "mgmt", "tags": ["management"]}


async def test_a_management_user_sees_only_its_vhosts(api: Api) -> None:
    await api.put("/api/users/mgmt", json={"password": "p", "tags": "management"})
    await api.put("/api/vhosts/mine")
    await api.put("/api/queues/%2F/hidden", json={})
    await api.put("/api/queues/mine/seen", json={})
    assert await api.json("/api/queues", user=("mgmt", "p")) == []
    assert await api.json("/api/vhosts", user=("mgmt", "p")) == []
    await api.put("/api/permissions/mine/mgmt", json={"configure": ".*", "write": ".*", "read": ".*"})
    assert [q["name"] for q in await api.json("/api/queues", user=("mgmt", "p"))] == ["seen"]
    assert [v["name"] for v in await api.json("/api/vhosts", user=("mgmt", "p"))] == ["mine"]
    overview = await api.json("/api/overview", user=("mgmt", "p"))
    assert overview["object_totals"]["queues"] == 1


async def test_vhost_permissions_gate_what_a_user_may_change(api: Api) -> None:
    await api.put("/api/users/mgmt", json={"password": "p", "tags": "management"})
    await api.put("/api/permissions/%2F/mgmt", json={"configure": "^a", "write": ".*", "read": ".*"})
    refused = await api.put("/api/queues/%2F/newq", json={}, user=("mgmt", "p"))
    assert (refused.status, await refused.json()) == (
        401,
        {"error": "not_authorised", "reason": "Access refused."},
    )
    assert "newq" not in api.server.broker.vhosts["/"].queues
    assert (await api.put("/api/queues/%2F/anewq", json={}, user=("mgmt", "p"))).status == 201


async def test_creating_a_vhost_grants_its_creator_full_permissions_and_keeps_metadata(api: Api) -> None:
    body = {"description": "d", "tags": "a,b", "default_queue_type": "quorum"}
    assert (await api.put("/api/vhosts/v1", json=body)).status == 201
    assert await api.json("/api/permissions/v1/guest") == {
        "user": "guest",
        "vhost": "v1",
        "configure": ".*",
        "write": ".*",
        "read": ".*",
    }
    vhost = await api.json("/api/vhosts/v1")
    assert (vhost["description"], vhost["tags"], vhost["default_queue_type"]) == ("d", ["a", "b"], "quorum")
    assert vhost["metadata"] == {"description": "d", "tags": ["a", "b"]}
    assert vhost["cluster_state"] == {"warrenmq@testhost": "running"}
    assert (await api.put("/api/vhosts/v1", json={"description": "d2"})).status == 204
    assert (await api.json("/api/vhosts/v1"))["description"] == "d2"
    assert (await api.delete("/api/vhosts/v1")).status == 204
    assert (await api.delete("/api/vhosts/v1")).status == 404
    assert ("guest", "v1") not in api.server.broker.access.permissions
