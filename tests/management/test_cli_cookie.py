"""The CLIs' node cookie (broker/config/cookie.py) as the management API takes it: the right value from a
loopback peer logs in as the administrator rmq-internal; a wrong value, no cookie configured, or a peer that
is not on loopback is an ordinary request without credentials (401)."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import Mock

from aiohttp.test_utils import make_mocked_request

from broker.config.cookie import ACTING_USER, HEADER, ensure_cookie, read_cookie
from broker.management.auth import cookie_user
from tests.management.conftest import Api


def _request(peer: str, cookie: str) -> object:
    transport = Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        (peer, 40000) if name == "peername" else default
    )
    return make_mocked_request("GET", "/api/users", headers={HEADER: cookie}, transport=transport)


async def test_the_cookie_logs_in_from_loopback_only(api: Api) -> None:
    api.context.cookie = "SECRETCOOKIEVALUEXYZ"
    response = await api.client.get("/api/users", headers={HEADER: "SECRETCOOKIEVALUEXYZ"})
    assert response.status == 200
    whoami = await api.client.get("/api/whoami", headers={HEADER: "SECRETCOOKIEVALUEXYZ"})
    assert await whoami.json() == {"name": ACTING_USER, "tags": ["administrator"]}
    wrong = await api.client.get("/api/users", headers={HEADER: "NOTTHECOOKIE"})
    assert wrong.status == 401
    for peer in ("127.0.0.1", "::1"):
        assert cookie_user(api.context, _request(peer, "SECRETCOOKIEVALUEXYZ")) is not None  # type: ignore[arg-type]
    for peer in ("10.1.2.3", "192.168.0.7", "fe80::1"):
        assert cookie_user(api.context, _request(peer, "SECRETCOOKIEVALUEXYZ")) is None  # type: ignore[arg-type]


async def test_no_cookie_configured_means_no_cookie_login(api: Api) -> None:
    api.context.cookie = None
    response = await api.client.get("/api/users", headers={HEADER: ""})
    assert response.status == 401


def test_the_cookie_file_is_created_private_and_reused(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    first = ensure_cookie(env)
    assert len(first) == 20
    assert first.isupper()
    assert ensure_cookie(env) == first == read_cookie(env)
    assert read_cookie({**env, "RABBITMQ_ERLANG_COOKIE": "OVERRIDE"}) == "OVERRIDE"
