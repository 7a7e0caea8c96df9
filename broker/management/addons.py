"""What `warrenmq serve` runs beside the AMQP listener: definitions applied before it binds, and the
management HTTP listener once it has (its port goes into the readiness line as ``management_port``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from broker.config import ServerConfig
from broker.management.api import ManagementAPI
from broker.management.definitions import DefinitionsError, apply_definitions, load_definitions
from broker.management.http import serve_http
from broker.server.listener import Addon, Server, StartupError

log = structlog.get_logger("warrenmq.management")


class DefinitionsAddon:
    """Apply a RabbitMQ definitions file before the AMQP port accepts connections."""

    def __init__(self, path: str) -> None:
        self.path = path

    async def before_listen(self, server: Server) -> None:
        try:
            apply_definitions(server.broker, load_definitions(self.path), self.path)
        except DefinitionsError as error:
            raise StartupError(str(error)) from None
        log.info("definitions_loaded", path=self.path)

    async def after_listen(self, server: Server) -> dict[str, Any]:
        return {}

    async def stop(self) -> None:
        return None


class ManagementAddon:
    """The management HTTP API on ``port`` (0 = ephemeral)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    async def before_listen(self, server: Server) -> None:
        return None

    async def after_listen(self, server: Server) -> dict[str, Any]:
        api = ManagementAPI(server)
        try:
            self._server = await serve_http(self.host, self.port, api.handle)
        except OSError as error:
            raise StartupError(f"cannot listen on {self.host}:{self.port} (management): {error}") from None
        api.http_port = int(self._server.sockets[0].getsockname()[1])
        log.info("management_listening", port=api.http_port)
        return {"management_port": api.http_port}

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


def addons_for(config: ServerConfig) -> list[Addon]:
    addons: list[Addon] = []
    if config.definitions:
        addons.append(DefinitionsAddon(config.definitions))
    if config.management_port is not None:
        addons.append(ManagementAddon(config.host, config.management_port))
    return addons
