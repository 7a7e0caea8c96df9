"""The CLI channel (broker/management/control.py) as the node serves it: a connection that proves the Erlang
cookie (broker/config/control_auth.py) reaches the management API's routes as the administrator
rmq-internal, with nothing else enabled; a wrong digest, another node's name or plain HTTP without the
handshake is refused; the HTTP listener has no cookie login at all. The cookie file is created mode 0400
as the Erlang runtime creates it."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.config import control_auth as wire
from broker.config.cookie import ACTING_USER, ensure_cookie, read_cookie
from broker.management.control import LOOPBACK, ControlAddon
from tests.management.conftest import Api

COOKIE = "SECRETCOOKIEVALUEXYZ"
NODE = "rabbit@testhost"


@pytest.fixture
async def channel(api: Api, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AsyncIterator[int]:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("RABBITMQ_ERLANG_COOKIE", COOKIE)
    api.server.config = type(api.server.config)(host="127.0.0.1", port=0, node_name=NODE)
    addon = ControlAddon(LOOPBACK, 0, shared=SimpleNamespace(context=api.context))
    ready = await addon.after_listen(api.server)
    try:
        yield int(ready["dist_port"])
    finally:
        await addon.stop()


async def _frame(reader: asyncio.StreamReader) -> dict[str, Any]:
    size = wire.LENGTH.unpack(await reader.readexactly(wire.LENGTH.size))[0]
    body: dict[str, Any] = json.loads(await reader.readexactly(size))
    return body


async def _handshake(
    port: int, cookie: str = COOKIE, node: str = NODE
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, dict[str, Any]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    hello = await _frame(reader)
    mine = wire.challenge()
    digest = wire.cli_digest(cookie, hello["challenge"], mine, node)
    writer.write(wire.encode_frame({"node": node, "challenge": mine, "digest": digest}))
    answer = await _frame(reader)
    if "digest" in answer:
        assert answer["digest"] == wire.node_digest(COOKIE, hello["challenge"], mine, node)
    return reader, writer, answer


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, extra: str = "") -> str:
    writer.write(f"GET {path} HTTP/1.1\r\nHost: node\r\n{extra}Connection: close\r\n\r\n".encode())
    return (await reader.read()).decode()


async def test_the_cookie_proven_reaches_the_api_as_the_cli_user(channel: int) -> None:
    reader, writer, answer = await _handshake(channel)
    assert "digest" in answer
    response = await _get(reader, writer, "/api/whoami")
    assert response.startswith("HTTP/1.1 200")
    assert json.loads(response.split("\r\n\r\n", 1)[1]) == {"name": ACTING_USER, "tags": ["administrator"]}
    writer.close()


async def test_overview_lists_the_channel_as_rabbitmqs_clustering_listener(api: Api, channel: int) -> None:
    listeners = (await api.json("/api/overview"))["listeners"]
    assert [(item["protocol"], item["ip_address"], item["port"]) for item in listeners] == [
        ("amqp", "127.0.0.1", api.server.port),
        ("clustering", "127.0.0.1", channel),
        ("http", "127.0.0.1", api.context.http_port),
    ]
    assert listeners[1]["socket_opts"] == []


async def test_user_credentials_on_the_channel_are_checked_as_such(channel: int) -> None:
    reader, writer, _ = await _handshake(channel)
    response = await _get(reader, writer, "/api/whoami", "Authorization: Basic Z3Vlc3Q6d3Jvbmc=\r\n")
    assert response.startswith("HTTP/1.1 401")  # guest:wrong, as authenticate_user relies on
    writer.close()


@pytest.mark.parametrize(
    ("cookie", "node", "error"),
    [("NOTTHECOOKIE", NODE, wire.NOT_ALLOWED), (COOKIE, "rabbit@elsewhere", wire.WRONG_NODE)],
)
async def test_a_wrong_cookie_or_node_is_refused_and_closed(
    channel: int, cookie: str, node: str, error: str
) -> None:
    reader, writer, answer = await _handshake(channel, cookie, node)
    assert answer["error"] == error
    assert await reader.read() == b""  # closed: no HTTP on this connection
    writer.close()


async def test_http_without_the_handshake_gets_no_answer(channel: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", channel)
    await _frame(reader)
    writer.write(b"GET /api/whoami HTTP/1.1\r\nHost: node\r\n\r\n")
    rest = await reader.read()
    assert b"HTTP/1.1" not in rest
    assert json.loads(rest[wire.LENGTH.size :])["error"] == wire.NOT_ALLOWED
    writer.close()


async def test_the_http_listener_has_no_cookie_login(api: Api) -> None:
    response = await api.client.get("/api/users", headers={"X-WarrenMQ-Cookie": COOKIE})
    assert response.status == 401


def test_the_cookie_file_is_created_owner_read_only_and_reused(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    first = ensure_cookie(env)
    assert len(first) == 20
    assert first.isupper()
    assert stat.S_IMODE((tmp_path / ".erlang.cookie").stat().st_mode) == 0o400
    assert ensure_cookie(env) == first == read_cookie(env)
    assert read_cookie({**env, "RABBITMQ_ERLANG_COOKIE": "OVERRIDE"}) == "OVERRIDE"
