"""The app's HTTP shapes, through aiohttp's test client: routing errors, login, malformed bodies,
percent-encoded names, columns, sorting and pagination (each checked against RabbitMQ 3.10.8's answers)."""

from __future__ import annotations

from tests.management.conftest import Api


async def test_unknown_path_is_404_object_not_found_even_without_credentials(api: Api) -> None:
    response = await api.get("/api/nope", user=None)
    assert response.status == 404
    assert await response.json() == {"error": "Object Not Found", "reason": "Not Found"}


async def test_known_path_with_another_method_is_405_with_allow(api: Api) -> None:
    response = await api.post("/api/overview")
    assert response.status == 405
    assert response.headers["Allow"] == "HEAD, GET, OPTIONS"
    contents = await api.get("/api/queues/%2F/q/contents")
    assert (contents.status, contents.headers["Allow"]) == (405, "DELETE, OPTIONS")
    options = await api.request("OPTIONS", "/api/queues/%2F/q", user=None)
    assert (options.status, options.headers["Allow"]) == (200, "HEAD, GET, PUT, DELETE, OPTIONS")


async def test_missing_credentials_get_a_bare_basic_challenge(api: Api) -> None:
    response = await api.get("/api/overview", user=None)
    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == 'Basic realm="RabbitMQ Management"'
    assert await response.read() == b""


async def test_wrong_password_is_login_failed_with_the_realm(api: Api) -> None:
    response = await api.get("/api/overview", user=("guest", "nope"))
    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == 'Basic realm="RabbitMQ Management"'
    assert await response.json() == {"error": "not_authorized", "reason": "Login failed"}


async def test_malformed_json_is_400_not_json_and_creates_nothing(api: Api) -> None:
    response = await api.put(
        "/api/vhosts/badjson", data=b"{nope", headers={"content-type": "application/json"}
    )
    assert response.status == 400
    assert await response.json() == {"error": "bad_request", "reason": "not_json"}
    assert (await api.get("/api/vhosts/badjson")).status == 404
    assert "badjson" not in api.server.broker.vhosts


async def test_missing_mandatory_keys_are_reported_as_rabbitmq_prints_them(api: Api) -> None:
    response = await api.put("/api/permissions/%2F/guest", json={"configure": ".*"})
    assert response.status == 400
    assert await response.json() == {
        "error": "bad_request",
        "reason": "[{key_missing,write},{key_missing,read}]",
    }


async def test_percent_encoded_vhost_and_queue_names(api: Api) -> None:
    assert (await api.put("/api/vhosts/a%2Fb")).status == 201
    name = "q sp#é"
    response = await api.put("/api/queues/a%2Fb/q%20sp%23%C3%A9", json={"durable": True})
    assert response.status == 201
    queue = await (await api.get("/api/queues/a%2Fb/q%20sp%23%C3%A9")).json()
    assert (queue["name"], queue["vhost"], queue["durable"]) == (name, "a/b", True)
    assert name in api.server.broker.vhosts["a/b"].queues


async def test_columns_keep_only_the_named_fields_including_nested_ones(api: Api) -> None:
    await api.put("/api/queues/%2F/c1", json={})
    rows = await (await api.get("/api/queues?columns=name,messages")).json()
    assert rows == [{"messages": 0, "name": "c1"}]
    overview = await (await api.get("/api/overview?columns=node,object_totals.queues")).json()
    assert overview == {"node": "warrenmq@testhost", "object_totals": {"queues": 1}}


async def test_sort_and_sort_reverse(api: Api) -> None:
    for name in ("b", "c", "a"):
        await api.put(f"/api/queues/%2F/{name}", json={})
    rows = await (await api.get("/api/queues?columns=name&sort=name&sort_reverse=true")).json()
    assert [row["name"] for row in rows] == ["c", "b", "a"]
    default = await (await api.get("/api/queues?columns=name")).json()
    assert [row["name"] for row in default] == ["a", "b", "c"]


async def test_pagination_answers_rabbitmqs_page_object(api: Api) -> None:
    url = "/api/exchanges/%2F?page=1&page_size=2&name=amq&use_regex=false&columns=name"
    page = await (await api.get(url)).json()
    assert page == {
        "filtered_count": 6,
        "item_count": 2,
        "items": [{"name": "amq.direct"}, {"name": "amq.fanout"}],
        "page": 1,
        "page_count": 3,
        "page_size": 2,
        "total_count": 7,
    }
    regex = await (await api.get("/api/exchanges/%2F?page=1&page_size=2&name=^AMQ.T&use_regex=true")).json()
    assert [item["name"] for item in regex["items"]] == ["amq.topic"]


async def test_invalid_pagination_is_400_with_rabbitmqs_reasons(api: Api) -> None:
    too_big = await api.get("/api/queues?page=1&page_size=501")
    assert too_big.status == 400
    assert await too_big.json() == {
        "error": "invalid_pagination_parameters",
        "reason": "Invalid pagination parameters: page number 1, page size 501",
    }
    zero = await (await api.get("/api/queues?page=0")).json()
    assert zero["reason"] == "Invalid pagination parameters: page number 0, page size undefined"
    garbage = await api.get("/api/queues?page=x")
    assert (garbage.status, await garbage.json()) == (
        400,
        {"error": "bad_request", "reason": "Pagination parameters are invalid"},
    )
    out = await api.get("/api/queues?page=2&page_size=100")
    assert await out.json() == {
        "error": "page_out_of_range",
        "reason": "Page out of range, page: 2 page size: 100, len: 0",
    }
    empty = await (await api.get("/api/queues?page=1")).json()
    assert (empty["items"], empty["page_count"], empty["page_size"]) == ([], 0, 100)
