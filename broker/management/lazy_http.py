"""An HTTP listener bound when the broker starts whose aiohttp application is built at its first connection.

`warrenmq serve` reports the management and Prometheus ports in its readiness line at once, but importing
aiohttp (which loads the system's CA bundle twice at import, for a client the broker never uses) and building
the management API's route table was most of a start with the defaults (docs/benchmarks.md, "Start-up"). A
connection accepted before the application exists waits with its reading paused, then is handed to the
application's request handler, as the CLI channel hands over its connections (broker/management/control.py).
The first request pays for the build; a failed build is logged and closes the waiting connections.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, cast

import structlog

if TYPE_CHECKING:
    import ssl

    from aiohttp import web

log = structlog.get_logger("warrenmq.management")


class _Pending(asyncio.Protocol):
    """One connection accepted before the application exists (reading paused until it is handed over)."""

    def __init__(self, lazy: LazyRunner) -> None:
        self.lazy = lazy
        self.buffer = bytearray()  # anything read before the pause took effect, replayed at the hand-over

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's TCPTransport is one without subclassing asyncio.Transport).
        stream = cast(asyncio.Transport, transport)
        stream.pause_reading()
        self.lazy.hand_over(stream, self.buffer)

    def data_received(self, data: bytes) -> None:
        self.buffer += data


class LazyRunner:
    """The aiohttp runner ``build`` returns, built once, at the first connection handed to it; connections
    handed over before it exists wait with their reading paused. Shared by the lazy HTTP listeners and the CLI
    channel (broker/management/control.py)."""

    def __init__(self, build: Callable[[], Awaitable[web.AppRunner]], what: str) -> None:
        self.build = build
        self.what = what
        self.runner: web.AppRunner | None = None
        self._runner_ready: asyncio.Future[web.AppRunner] | None = None
        self._handovers: set[asyncio.Task[None]] = set()
        self._waiting: set[asyncio.Transport] = set()  # handed over, the application not built yet

    def hand_over(self, transport: asyncio.Transport, read: bytes | bytearray) -> None:
        """``transport`` (reading paused) becomes a connection of the application; ``read``: what was read
        from it already, replayed to the application (a bytearray is read at the hand-over)."""
        if self.runner is not None and self.runner.server is not None:
            _serve(self.runner, transport, read)
            return
        self._waiting.add(transport)
        task = asyncio.get_running_loop().create_task(self._attach(transport, read))
        self._handovers.add(task)  # held until done: a task nobody references may be collected
        task.add_done_callback(self._handovers.discard)

    async def _attach(self, transport: asyncio.Transport, read: bytes | bytearray) -> None:
        if self._runner_ready is None:
            self._runner_ready = asyncio.get_running_loop().create_future()
            try:
                self.runner = await self.build()
                self._runner_ready.set_result(self.runner)
            except Exception as error:  # every waiting connection sees it and is closed
                self._runner_ready.set_exception(error)
                log.error("http_application_failed", listener=self.what, error=repr(error))
        try:
            runner = await asyncio.shield(self._runner_ready)
        except Exception:
            transport.close()
            return
        finally:
            self._waiting.discard(transport)
        _serve(runner, transport, read)

    async def stop(self) -> None:
        """Close the connections still waiting, then the application and its connections (if it was built)."""
        for task in list(self._handovers):
            task.cancel()
        for transport in list(self._waiting):
            transport.close()
        self._waiting.clear()
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


def _serve(runner: web.AppRunner, transport: asyncio.Transport, read: bytes | bytearray) -> None:
    if transport.is_closing() or runner.server is None:
        transport.close()
        return
    handler = runner.server()
    transport.set_protocol(handler)
    handler.connection_made(transport)
    if read:
        handler.data_received(bytes(read))
    transport.resume_reading()


class LazyHTTPListener:
    """Listening sockets served by the aiohttp runner ``build`` returns, called once, at the first
    connection on any of them."""

    def __init__(self, build: Callable[[], Awaitable[web.AppRunner]], what: str) -> None:
        self.lazy = LazyRunner(build, what)
        self._servers: list[asyncio.Server] = []

    @property
    def runner(self) -> web.AppRunner | None:
        return self.lazy.runner

    async def listen(self, sock: socket.socket, ssl_context: ssl.SSLContext | None = None) -> int:
        """Serve ``sock`` (bound and listening), with TLS when ``ssl_context`` is given; its port."""
        server = await asyncio.get_running_loop().create_server(
            lambda: _Pending(self.lazy), sock=sock, ssl=ssl_context
        )
        self._servers.append(server)
        return int(sock.getsockname()[1])

    async def stop(self) -> None:
        """Close the listening sockets, then the application and its connections (if it was built)."""
        for server in self._servers:
            server.close()
        self._servers.clear()
        await self.lazy.stop()
