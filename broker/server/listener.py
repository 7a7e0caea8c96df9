"""The AMQP listeners: the plain socket (``listeners.tcp.default``) and, when configured, the AMQPS one
(``listeners.ssl.default``), each making one `AMQPProtocol` per client for the node that owns them."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from broker.server.amqp_protocol import AMQPProtocol, ConnectionHost
from broker.server.sockets import LISTEN_BACKLOG, listen_socket

if TYPE_CHECKING:
    from broker.config import ServerConfig

log = structlog.get_logger("warrenmq.server")


class ListenerConfigError(Exception):
    """The AMQPS listener's TLS options cannot be used (the message says which and why)."""


class AMQPListener:
    """Binds the AMQP port (and the AMQPS port) for ``host``; close() stops accepting, clients stay."""

    def __init__(self, host: ConnectionHost, config: ServerConfig) -> None:
        self.host = host
        self.config = config
        self.port = 0  # the bound AMQP port once started
        self.ssl_port: int | None = None  # the bound AMQPS port once started
        self._server: asyncio.Server | None = None
        self._tls_server: asyncio.Server | None = None

    async def start(self) -> tuple[str, int]:
        """Listen on the AMQP port (then the AMQPS one); the bound host and AMQP port."""
        loop = self.host.loop
        self._server = await loop.create_server(
            lambda: AMQPProtocol(self.host),
            sock=listen_socket(self.config.host, self.config.port),
            backlog=LISTEN_BACKLOG,  # create_server listens again, with its own default (100) unless told
        )
        host, port = self._server.sockets[0].getsockname()[:2]
        self.port = int(port)
        if self.config.ssl_port is not None:
            await self._start_tls()
        return str(host), self.port

    async def _start_tls(self) -> None:
        """The AMQPS listener (``broker.server.tls``), with ssl_handshake_timeout."""
        assert self.config.ssl_port is not None
        # broker.server.tls only for an AMQPS listener: start-up without one does not import it.
        from broker.server.tls import TLSConfigError, server_context

        try:
            context = server_context(self.config.ssl_options)
        except TLSConfigError as error:
            raise ListenerConfigError(str(error)) from error
        self._tls_server = await self.host.loop.create_server(
            lambda: AMQPProtocol(self.host),
            sock=listen_socket(self.config.host, self.config.ssl_port),
            backlog=LISTEN_BACKLOG,
            ssl=context,
            ssl_handshake_timeout=self.config.ssl_handshake_timeout_s,
        )
        self.ssl_port = int(self._tls_server.sockets[0].getsockname()[1])
        log.info("amqps_listening", port=self.ssl_port, verify=self.config.ssl_options.verify)

    def close(self) -> None:
        """Stop accepting connections (those open stay open)."""
        for server in (self._server, self._tls_server):
            if server is not None:
                server.close()

    async def wait_closed(self) -> None:
        for server in (self._server, self._tls_server):
            if server is not None:
                await server.wait_closed()
