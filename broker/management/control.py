"""The CLI channel: what RabbitMQ's node offers its CLIs on the distribution port (RABBITMQ_DIST_PORT, AMQP
port + 20000), loopback only. A connection first proves it holds the node's Erlang cookie
(broker/config/control_auth.py, challenge and response both ways); then it is handed to an aiohttp server of
the management API's own route table (broker/management/api/app.py, built with ``cli=True``), so rabbitmqctl,
rabbitmq-diagnostics and rabbitmq-plugins run the very handlers the HTTP API runs, acting as the CLI user,
with every plugin disabled and no management listener. Only this channel has ``stop``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

import structlog

from broker.config import control_auth as wire
from broker.config.cookie import cookie_path, ensure_cookie
from broker.config.plugins import started_plugins
from broker.management.lazy_http import LazyRunner
from broker.server.server import Server, StartupError
from broker.server.sockets import display_address, listen_socket

# The HTTP side (aiohttp, the management application) is imported at the first authenticated connection,
# not at start-up: `warrenmq serve` opens this channel whatever it runs (start-up time).
if TYPE_CHECKING:
    from aiohttp import web

log = structlog.get_logger("warrenmq.control")
# The distribution listener binds loopback by default (the CLIs run on the node's machine).
LOOPBACK = "127.0.0.1"
HANDSHAKE_TIMEOUT_S = 10.0


class _Handshake(asyncio.Protocol):
    """One CLI connection until it has proved the cookie; then its transport belongs to aiohttp."""

    def __init__(self, channel: ControlAddon) -> None:
        self.channel = channel
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.node_challenge = wire.challenge()
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCPTransport is no subclass of asyncio.Transport, but has its methods.
        self.transport = cast(asyncio.Transport, transport)
        hello = {"protocol": wire.PROTOCOL, "node": self.channel.node, "challenge": self.node_challenge}
        self.transport.write(wire.encode_frame(hello))
        self.timer = asyncio.get_running_loop().call_later(HANDSHAKE_TIMEOUT_S, self.transport.close)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.buffer += data
        try:
            frame = wire.decode_frame(self.buffer)
        except wire.HandshakeError as error:
            self._refuse(wire.NOT_ALLOWED, str(error))
            return
        if frame is None:
            return
        body, size = frame
        rest = bytes(self.buffer[size:])
        cookie = self.channel.cookie
        wanted, theirs = body.get("node"), body.get("challenge")
        if wanted != self.channel.node:
            # Erlang distribution refuses a connection meant for another node name.
            self._refuse(wire.WRONG_NODE, f"this is node {self.channel.node}, not {wanted}")
            return
        if (
            cookie is None
            or not isinstance(theirs, str)
            or not wire.same(body.get("digest"), wire.cli_digest(cookie, self.node_challenge, theirs, wanted))
        ):
            log.warning("cli_connection_refused", reason="cookie mismatch")
            self._refuse(wire.NOT_ALLOWED, "the Erlang cookie does not match")
            return
        self.transport.write(
            wire.encode_frame({"digest": wire.node_digest(cookie, self.node_challenge, theirs, wanted)})
        )
        if self.timer is not None:
            self.timer.cancel()
        self.channel.hand_over(self.transport, rest)

    def _refuse(self, error: str, reason: str) -> None:
        assert self.transport is not None
        self.transport.write(wire.encode_frame({"error": error, "reason": reason}))
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()


async def _stop(request: web.Request) -> web.Response:
    """`rabbitmqctl stop`: the node stops as on SIGTERM (clients get 320 CONNECTION_FORCED) after this
    answers."""
    from aiohttp import web

    from broker.management.api.app import CONTEXT_KEY

    server = request.app[CONTEXT_KEY].server
    if server.request_stop is not None:
        asyncio.get_running_loop().call_soon(server.request_stop)
    return web.json_response({"stopping": request.app[CONTEXT_KEY].node})


async def _node(request: web.Request) -> web.Response:
    """What `rabbitmq-diagnostics status`, `listeners` and `check_port_connectivity` report of the node: its
    pid, listeners and paths, as the node has them (RabbitMQ's CLIs ask the node, not their environment)."""
    from aiohttp import web

    from broker.management.api.app import CONTEXT_KEY
    from broker.management.views.listeners import cli_listeners

    context = request.app[CONTEXT_KEY]
    config = context.server.config
    return web.json_response(
        {
            "node": context.node,
            "pid": int(context.os_pid),
            "listeners": cli_listeners(context),
            "config_files": list(config.config_files),
            "enabled_plugin_file": config.enabled_plugins_file,
            "data_directory": config.data_dir,
            "log_file": config.log_file,
            "vm_memory_high_watermark_setting": {
                config.vm_memory_high_watermark.kind: config.vm_memory_high_watermark.value
            },
            "running_plugins": list(context.running_plugins),
        }
    )


class ControlAddon:
    """Serves the CLI channel from the moment the AMQP port is bound; shares the management listener's
    context (its running plugin list) when there is one."""

    def __init__(
        self, host: str, port: int, shared: Any = None, required: bool = True, prometheus: Any = None
    ) -> None:
        self.host = host
        self.port = port
        # False for the derived default port: taken, it gives way to an ephemeral one (in the ready line).
        self.required = required
        self.shared = shared  # a ManagementAddon, whose context the CLIs then see
        self.prometheus = prometheus  # a PrometheusAddon, listed among the listeners when not shared
        self.node = ""
        self.cookie: str | None = None
        self._lazy = LazyRunner(self._app_runner, "CLI channel")
        self._server: asyncio.Server | None = None
        self._broker_server: Server | None = None

    async def before_listen(self, server: Server) -> None:
        return None

    async def after_listen(self, server: Server) -> dict[str, Any]:
        self.node = server.config.node_name
        self._broker_server = server
        try:
            self.cookie = ensure_cookie()
        except OSError as error:
            log.warning("cli_cookie_unavailable", path=str(cookie_path()), error=str(error))
        try:
            sock = listen_socket(self.host, self.port)
        except OSError as error:
            if not self.required and self.port:
                log.warning("dist_port_taken", port=self.port, error=str(error), using="ephemeral")
                self.port = 0
                return await self.after_listen(server)
            raise StartupError(
                f"cannot listen on {display_address(self.host, self.port)} (distribution port, CLI channel): "
                f"{error}"
            ) from None
        self._server = await asyncio.get_running_loop().create_server(lambda: _Handshake(self), sock=sock)
        port = int(sock.getsockname()[1])
        shared_context = getattr(self.shared, "context", None)
        if shared_context is not None:
            shared_context.dist_port = port  # /api/overview's clustering listener
        log.info("cli_channel_listening", host=self.host, port=port)
        return {"dist_port": port}

    async def _app_runner(self) -> web.AppRunner:
        """The CLI application, set up once, at the first authenticated connection."""
        from aiohttp import web

        from broker.management.api.app import build_app
        from broker.management.context import ManagementContext

        assert self._broker_server is not None
        context = getattr(self.shared, "context", None)
        if context is None:
            server = self._broker_server
            context = ManagementContext(
                server, node=self.node, running_plugins=started_plugins(server.config.enabled_plugins)
            )
            context.dist_port = int(self._server.sockets[0].getsockname()[1]) if self._server else 0
            context.prometheus_port = int(getattr(self.prometheus, "bound_port", 0))
        app = build_app(context, cli=True)
        app.router.add_post("/api/warrenmq/cli/stop", _stop)
        app.router.add_get("/api/warrenmq/cli/node", _node)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        return runner

    def hand_over(self, transport: asyncio.Transport, rest: bytes) -> None:
        """The authenticated connection becomes an HTTP connection of the CLI application (reading paused
        until that application is ready)."""
        transport.pause_reading()
        self._lazy.hand_over(transport, rest)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._lazy.stop()
