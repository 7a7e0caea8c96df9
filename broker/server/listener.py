"""The listening socket, the broker's lifetime on one event loop, and clean shutdown on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable

import structlog

from broker.config import ServerConfig
from broker.core.broker import Broker
from broker.server.amqp_protocol import AMQPProtocol
from broker.server.clock import LoopClock
from protocol.header_rewrite import rewrite_content_header

log = structlog.get_logger("warrenmq.server")


class Server:
    """Owns the core ``Broker`` and the AMQP listener; start() binds, stop() closes every client with 320."""

    def __init__(self, config: ServerConfig, loop: asyncio.AbstractEventLoop) -> None:
        self.config = config
        self.loop = loop
        self.clock = LoopClock(loop)
        self.broker = Broker(
            loop.call_soon,
            users=config.users,
            vhosts=config.vhosts,
            name_seed=config.name_seed,
            clock=self.clock,
            profile=config.profile,
            rewrite_header=rewrite_content_header,
        )
        self.connections: set[AMQPProtocol] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> tuple[str, int]:
        self._server = await self.loop.create_server(
            lambda: AMQPProtocol(self),
            host=self.config.host,
            port=self.config.port,
            reuse_address=True,
            backlog=1024,
        )
        host, port = self._server.sockets[0].getsockname()[:2]
        return str(host), int(port)

    async def stop(self, grace_s: float = 2.0) -> None:
        """Close every client with connection.close 320 (as `rabbitmqctl stop`), wait briefly, then unbind."""
        if self._server is not None:
            self._server.close()
        for protocol in list(self.connections):
            if protocol.session is not None:
                protocol.session.force_close()
        deadline = self.loop.time() + grace_s
        while self.connections and self.loop.time() < deadline:
            await asyncio.sleep(0.01)
        for protocol in list(self.connections):
            protocol.close()
        if self._server is not None:
            await self._server.wait_closed()


async def serve(config: ServerConfig, on_ready: Callable[[str, int], None] | None = None) -> None:
    """Run until SIGTERM or SIGINT, then shut down cleanly."""
    loop = asyncio.get_running_loop()
    server = Server(config, loop)
    host, port = await server.start()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info("listening", host=host, port=port, vhosts=list(config.vhosts), users=sorted(config.users))
    if on_ready is not None:
        on_ready(host, port)
    await stop.wait()
    log.info("shutting_down", connections=len(server.connections))
    await server.stop()
    log.info("stopped")


def report_ready(host: str, port: int) -> None:
    """The one JSON line on stdout that scripts and fixtures wait for (`--port 0` tells them the port)."""
    print(
        json.dumps({"event": "ready", "amqp_host": host, "amqp_port": port, "url": f"amqp://{host}:{port}/"}),
        flush=True,
    )


def run(config: ServerConfig) -> int:
    try:
        import uvloop

        runner: Callable[..., None] = uvloop.run
    except ImportError:  # pragma: no cover - platforms without uvloop
        runner = asyncio.run
    try:
        runner(serve(config, report_ready))
    except OSError as error:
        print(f"warrenmq: cannot listen on {config.host}:{config.port}: {error}", file=sys.stderr)
        return 1
    return 0
