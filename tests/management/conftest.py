"""An in-process server (AMQP on port 0) and the management app behind aiohttp's test client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import ClientResponse, encode_basic_auth
from aiohttp.test_utils import TestClient, TestServer

from broker.config import ServerConfig
from broker.management.api.app import build_app
from broker.management.context import ManagementContext
from broker.node import build_node
from broker.server.server import Server

GUEST = ("guest", "guest")


@dataclass
class Api:
    """Requests as ``user`` (guest unless given; ``None`` sends no credentials)."""

    client: TestClient[Any, Any]
    server: Server
    context: ManagementContext

    @property
    def amqp_url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.server.port}/"

    async def request(
        self, method: str, path: str, user: tuple[str, str] | None = GUEST, **kwargs: Any
    ) -> ClientResponse:
        headers = dict(kwargs.pop("headers", {}))
        if user is not None:
            headers["Authorization"] = encode_basic_auth(*user)
        return await self.client.request(method, path, headers=headers, **kwargs)

    async def get(self, path: str, **kwargs: Any) -> ClientResponse:
        return await self.request("GET", path, **kwargs)

    async def put(self, path: str, **kwargs: Any) -> ClientResponse:
        return await self.request("PUT", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> ClientResponse:
        return await self.request("POST", path, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> ClientResponse:
        return await self.request("DELETE", path, **kwargs)

    async def json(self, path: str, **kwargs: Any) -> Any:
        response = await self.get(path, **kwargs)
        assert response.status == 200, (path, response.status, await response.text())
        return await response.json()


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    async with running_api(ServerConfig(host="127.0.0.1", port=0, management_port=None)) as running:
        yield running


@asynccontextmanager
async def running_api(config: ServerConfig) -> AsyncIterator[Api]:
    """A node built from ``config`` on the running loop, with its management app on a test server."""
    server = build_node(config, asyncio.get_running_loop())
    await server.start()
    context = ManagementContext(server, node="warrenmq@testhost")
    client: TestClient[Any, Any] = TestClient(TestServer(build_app(context)))
    await client.start_server()
    context.http_port = client.port or 0
    try:
        yield Api(client, server, context)
    finally:
        await client.close()
        await server.stop(grace_s=0.5)
