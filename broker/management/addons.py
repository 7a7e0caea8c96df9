"""What `warrenmq serve` runs beside the AMQP listener: definitions applied before it binds, and the
management HTTP API (broker.management.api.app) once it has (its port goes into the readiness line as
``management_port``).
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

import structlog

from broker.config import ServerConfig, TLSOptions
from broker.config.plugins import started_plugins
from broker.management.lazy_http import LazyHTTPListener
from broker.server.server import Addon, Server, StartupError
from broker.server.sockets import display_address, listen_socket

# What each addon serves with is imported when it is first needed, not with this module, which `warrenmq
# serve` imports whatever it runs: aiohttp and the applications at an HTTP listener's first connection
# (broker.management.lazy_http), prometheus_client at the first scrape, the TLS set-up for management.ssl
# only. They were most of a start's import time.
if TYPE_CHECKING:
    from aiohttp import web

    from broker.management.context import ManagementContext

log = structlog.get_logger("warrenmq.management")


class DefinitionsAddon:
    """Apply a RabbitMQ definitions file before the AMQP port accepts connections."""

    def __init__(self, path: str) -> None:
        self.path = path

    async def before_listen(self, server: Server) -> None:
        from broker.management.definitions.document import (
            DefinitionsError,
            apply_definitions,
            load_definitions,
        )

        try:
            apply_definitions(server.broker, load_definitions(self.path), self.path)
        except DefinitionsError as error:
            raise StartupError(str(error)) from None
        log.info("definitions_loaded", path=self.path)

    async def after_listen(self, server: Server) -> dict[str, Any]:
        return {}

    async def stop(self) -> None:
        return None


def _bind(host: str, port: int, what: str) -> socket.socket:
    """A listening socket on ``host:port``; StartupError when it cannot listen."""
    try:
        return listen_socket(host, port)
    except OSError as error:
        raise StartupError(f"cannot listen on {display_address(host, port)} ({what}): {error}") from None


class _HTTPAddon:
    """An HTTP listener bound once the AMQP listener has, its aiohttp application built at the first
    connection (broker.management.lazy_http), cleaned up at stop."""

    _listener: LazyHTTPListener | None = None

    async def before_listen(self, server: Server) -> None:
        return None

    async def stop(self) -> None:
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None


async def _runner(app: web.Application) -> web.AppRunner:
    from aiohttp import web

    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    return runner


class ManagementAddon(_HTTPAddon):
    """The management HTTP API on ``port`` (0 = ephemeral)."""

    context: ManagementContext | None = None

    def __init__(
        self,
        host: str,
        port: int,
        ssl_port: int | None = None,
        ssl_options: TLSOptions | None = None,
        http: bool = True,
    ) -> None:
        self.host = host
        self.port = port
        # management.ssl.port / management.ssl.*: HTTPS beside HTTP (``http``: management.tcp.* configured
        # too), or alone, on the same application.
        self.ssl_port = ssl_port
        self.ssl_options = ssl_options or TLSOptions()
        self.http = http or ssl_port is None

    async def after_listen(self, server: Server) -> dict[str, Any]:
        from broker.management.context import ManagementContext

        context = ManagementContext(
            server,
            node=server.config.node_name,
            http_host=self.host,
            # The node name is the default cluster name (broker/config); only a configured one overrides the
            # cluster_name global parameter kept by definitions and the store, as rabbit_nodes sets it.
            cluster_name=_configured_cluster_name(server.config),
            running_plugins=started_plugins(server.config.enabled_plugins),
        )
        self.context = context  # the CLI channel's too (broker/management/control.py)
        # Statistics are sampled from the start, as RabbitMQ's management agent does, whether or not anyone
        # has asked for them yet (the application, built at the first request, leaves it running).
        context.sampler.start()
        self._listener = LazyHTTPListener(lambda: self._build(context), "management")
        ready: dict[str, Any] = {"management_port": None}
        if self.http:
            sock = _bind(self.host, self.port, "management")
            context.http_port = await self._listener.listen(sock)
            log.info("management_listening", port=context.http_port)
            ready["management_port"] = context.http_port
        if self.ssl_port is not None:
            context.https_port = await self._start_https()
            ready["management_ssl_port"] = context.https_port
        return ready

    @staticmethod
    async def _build(context: ManagementContext) -> web.AppRunner:
        from broker.management.api.app import build_app

        return await _runner(build_app(context))

    async def _start_https(self) -> int:
        assert self._listener is not None
        assert self.ssl_port is not None
        # The certificate and key are read now: a bad one fails the start, not the first request.
        from broker.server.tls import TLSConfigError, server_context

        try:
            ssl_context = server_context(self.ssl_options)
        except TLSConfigError as error:
            raise StartupError(f"management: {error}") from None
        port = await self._listener.listen(_bind(self.host, self.ssl_port, "management TLS"), ssl_context)
        log.info("management_tls_listening", port=port)
        return port

    async def stop(self) -> None:
        await super().stop()
        if self.context is not None:
            self.context.sampler.stop()


class PrometheusAddon(_HTTPAddon):
    """rabbitmq_prometheus's endpoint on its own ``port`` (0 = ephemeral), reported as ``prometheus_port``."""

    def __init__(self, host: str, port: int, shared: ManagementAddon | None = None) -> None:
        self.host = host
        self.port = port
        self.shared = shared  # the management addon, whose context lists this listener (/api/overview)
        self.bound_port = 0

    async def after_listen(self, server: Server) -> dict[str, Any]:
        self._listener = LazyHTTPListener(lambda: self._build(server), "prometheus")
        port = await self._listener.listen(_bind(self.host, self.port, "prometheus"))
        self.bound_port = port
        if self.shared is not None and self.shared.context is not None:
            self.shared.context.prometheus_port = port
        log.info("prometheus_listening", port=port)
        return {"prometheus_port": port}

    async def _build(self, server: Server) -> web.AppRunner:
        from broker.management.context import ManagementContext
        from broker.management.metrics.prometheus_app import build_prometheus_app

        return await _runner(build_prometheus_app(ManagementContext(server, http_host=self.host)))


def addons_for(config: ServerConfig) -> list[Addon]:
    addons: list[Addon] = []
    if config.definitions:
        addons.append(DefinitionsAddon(config.definitions))
    if config.management_port is not None:
        addons.append(
            ManagementAddon(
                config.host,
                config.management_port,
                config.management_ssl_port,
                config.management_ssl,
                http=config.management_http,
            )
        )
    # After the management addon: the prometheus listener and the CLI channel share its context.
    management = next((addon for addon in addons if isinstance(addon, ManagementAddon)), None)
    prometheus = None
    if config.prometheus_port is not None:
        prometheus = PrometheusAddon(config.host, config.prometheus_port, management)
        addons.append(prometheus)
    if config.dist_port is not None:
        from broker.management.control import LOOPBACK, ControlAddon

        addons.append(  # last: it stops first
            ControlAddon(LOOPBACK, config.dist_port, management, config.dist_port_configured, prometheus)
        )
    return addons


def _configured_cluster_name(config: ServerConfig) -> str:
    name = config.session.cluster_name or ""
    return "" if name == config.node_name else name
