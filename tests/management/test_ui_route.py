"""The web UI's server side: `/` and its assets without login (only /api asks, as RabbitMQ), and the
dry-run route endpoint the topology graph's "route a test key" box calls."""

from __future__ import annotations

from tests.management.conftest import Api


async def test_ui_page_and_assets_are_served_without_credentials(api: Api) -> None:
    page = await api.get("/", user=None)
    assert page.status == 200
    assert "WWW-Authenticate" not in page.headers
    html = await page.text()
    assert page.content_type == "text/html"
    asset = html.split('src="', 1)[1].split('"', 1)[0]
    assert asset.startswith("/assets/")
    script = await api.get(asset, user=None)
    assert script.status == 200
    assert "http://" not in html  # nothing from a CDN
    assert "https://" not in html
    assert (await api.get("/api/overview", user=None)).status == 401


async def _declare(api: Api) -> None:
    for path, body in [
        ("/api/exchanges/%2F/ae", {"type": "fanout"}),
        ("/api/exchanges/%2F/main", {"type": "direct", "arguments": {"alternate-exchange": "ae"}}),
        ("/api/exchanges/%2F/hub", {"type": "topic"}),
        ("/api/queues/%2F/orders", {}),
        ("/api/queues/%2F/lost", {}),
    ]:
        assert (await api.put(path, json=body)).status == 201
    for path, key in [
        ("/api/bindings/%2F/e/main/e/hub", "order"),
        ("/api/bindings/%2F/e/hub/q/orders", "#"),
        ("/api/bindings/%2F/e/ae/q/lost", ""),
    ]:
        assert (await api.post(path, json={"routing_key": key})).status == 201


async def test_route_follows_exchange_bindings_and_enqueues_nothing(api: Api) -> None:
    await _declare(api)
    response = await api.post("/api/exchanges/%2F/main/route", json={"routing_key": "order"})
    assert response.status == 200
    assert await response.json() == {
        "routed": True,
        "queues": ["orders"],
        "hops": [
            {"source": "main", "destination": "hub", "destination_type": "exchange", "alternate": False},
            {"source": "hub", "destination": "orders", "destination_type": "queue", "alternate": False},
        ],
    }
    assert (await api.json("/api/queues/%2F/orders"))["messages"] == 0


async def test_route_takes_the_alternate_exchange_when_nothing_matches(api: Api) -> None:
    await _declare(api)
    answer = await (await api.post("/api/exchanges/%2F/main/route", json={"routing_key": "x"})).json()
    assert answer["queues"] == ["lost"]
    assert answer["hops"][0] == {
        "source": "main",
        "destination": "ae",
        "destination_type": "exchange",
        "alternate": True,
    }
    assert (await api.json("/api/queues/%2F/lost"))["messages"] == 0


async def test_route_of_an_unroutable_key_and_errors(api: Api) -> None:
    answer = await (await api.post("/api/exchanges/%2F/amq.direct/route", json={"routing_key": "no"})).json()
    assert answer == {"routed": False, "queues": [], "hops": []}
    missing = await api.post("/api/exchanges/%2F/nope/route", json={"routing_key": "k"})
    assert missing.status == 404
    bad = await api.post("/api/exchanges/%2F/amq.direct/route", json={})
    assert bad.status == 400
    assert (await api.post("/api/exchanges/%2F/amq.direct/route", user=None, json={})).status == 401


async def test_route_matches_headers_given_as_properties(api: Api) -> None:
    assert (await api.put("/api/queues/%2F/eu", json={})).status == 201
    binding = {"routing_key": "", "arguments": {"x-match": "all", "region": "eu"}}
    assert (await api.post("/api/bindings/%2F/e/amq.match/q/eu", json=binding)).status == 201
    path = "/api/exchanges/%2F/amq.match/route"
    hit = {"routing_key": "", "properties": {"headers": {"region": "eu"}}}
    miss = {"routing_key": "", "properties": {"headers": {"region": "us"}}}
    assert (await (await api.post(path, json=hit)).json())["queues"] == ["eu"]
    assert (await (await api.post(path, json=miss)).json())["queues"] == []
