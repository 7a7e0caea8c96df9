"""Embedding API: run an in-memory WarrenMQ on port 0 inside the current asyncio loop (`EmbeddedBroker`) or
in a background thread with its own loop (`BrokerThread`), and get its ``amqp://`` URL.

Both reuse the real server (`broker.server.server.Server`, built by `broker.node.build_node`): clients connect
over real sockets. The core is single-threaded, so every call from another thread into a `BrokerThread` is
marshalled onto its loop.

    async with EmbeddedBroker() as broker:           # in the running loop
        connection = await aio_pika.connect(broker.url)

    with BrokerThread() as broker:                   # from synchronous code
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import quote

from broker.config import ServerConfig
from broker.core.broker import Broker
from broker.core.model.clock import ManualClock
from broker.core.model.profile import PROFILES
from broker.node import build_node
from broker.server.server import Server
from broker.session.config import SessionConfig
from broker.storage.base import Store
from broker.testing.faults import Faults
from broker.testing.handles import VhostHandle
from broker.testing.inspect import Inspector

T = TypeVar("T")

# A call into the broker thread must never hang a test run forever.
CALL_TIMEOUT_S = 60.0


def amqp_url(host: str, port: int, vhost: str = "/", user: str = "guest", password: str = "guest") -> str:
    """``amqp://user:password@host:port/<vhost>``; the vhost is percent-encoded ("/" is the default one)."""
    path = "" if vhost == "/" else quote(vhost, safe="")
    return f"amqp://{quote(user, safe='')}:{quote(password, safe='')}@{host}:{port}/{path}"


class EmbeddedBroker:
    """A broker on the running loop. ``inspector`` and ``faults`` work on this loop's thread.

    ``name_seed`` makes server-generated names (`amq.gen-…`, `amq.ctag-…`) reproducible.
    ``definitions`` is a RabbitMQ definitions JSON file applied before the port accepts connections.
    ``record_history=False`` leaves the event bus without observers (no history, no event-driven waits).
    ``store`` keeps durable entities and persistent messages across brokers: start a new `EmbeddedBroker` with
    the same `MemoryStore` to test what survives a restart (``data_dir`` does the same on disk, with SQLite).
    Without either, nothing outlives the broker.
    ``manual_clock=True`` runs every time-based feature (TTL, x-expires, delayed messages, heartbeats, the
    handshake timeout) on a `ManualClock` that only `advance_clock` moves: tests never sleep for time.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        users: Mapping[str, str] | None = None,
        vhosts: Iterable[str] = ("/",),
        name_seed: int | None = None,
        heartbeat_s: int | None = None,
        session: SessionConfig | None = None,
        definitions: str | os.PathLike[str] | None = None,
        record_history: bool = True,
        manual_clock: bool = False,
        store: Store | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        profile: str | None = None,
    ) -> None:
        session_config = session or SessionConfig()
        if heartbeat_s is not None:
            session_config = session_config._replace(heartbeat_s=heartbeat_s)
        self.config = ServerConfig(
            host=host,
            port=port,
            users=dict(users) if users is not None else {"guest": "guest"},
            vhosts=tuple(vhosts),
            name_seed=name_seed,
            session=session_config,
            data_dir=None if data_dir is None else os.fspath(data_dir),
        )
        if profile is not None:  # the RabbitMQ release to emulate (`--profile`), e.g. "rabbitmq-4.0"
            self.config = self.config._replace(profile=PROFILES[profile])
        self.store = store
        self.definitions = definitions
        self.record_history = record_history
        self.manual_clock: ManualClock | None = ManualClock() if manual_clock else None
        self._server: Server | None = None
        self._inspector: Inspector | None = None
        self._faults: Faults | None = None
        self.host = host
        self.port = 0

    async def start(self) -> Self:
        server = build_node(
            self.config, asyncio.get_running_loop(), clock=self.manual_clock, store=self.store
        )
        server.recover()
        if self.definitions is not None:
            from broker.management.definitions.document import apply_definitions, load_definitions

            apply_definitions(server.broker, load_definitions(self.definitions))
        if self.record_history:
            self._inspector = Inspector(server)
        self._faults = Faults(server)
        self.host, self.port = await server.start()
        self._server = server
        return self

    def advance_clock(self, seconds: float) -> None:
        """Move the manual clock forward: due timers (expiry, delays, heartbeats) fire in time order."""
        if self.manual_clock is None:
            raise RuntimeError("the broker runs on the real clock: start it with manual_clock=True")
        self.manual_clock.advance(seconds)

    async def stop(self) -> None:
        """Close every client with 320 (as a RabbitMQ shutdown does) and unbind."""
        server, self._server = self._server, None
        if server is None:
            return
        if self._inspector is not None:
            self._inspector.close()
        await server.stop(grace_s=1.0)

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    @property
    def server(self) -> Server:
        if self._server is None:
            raise RuntimeError("the broker is not running")
        return self._server

    @property
    def broker(self) -> Broker:
        """The core `Broker` (vhosts, queues, exchanges); touch it only on the loop thread."""
        return self.server.broker

    @property
    def inspector(self) -> Inspector:
        if self._inspector is None:
            raise RuntimeError("inspection is off (record_history=False) or the broker is not running")
        return self._inspector

    @property
    def faults(self) -> Faults:
        if self._faults is None:
            raise RuntimeError("the broker is not running")
        return self._faults

    @property
    def url(self) -> str:
        """``amqp://guest:guest@127.0.0.1:PORT/`` (the default vhost)."""
        return self.url_for("/")

    def url_for(self, vhost: str) -> str:
        return amqp_url(self.host, self.port, vhost)

    def add_vhost(self, name: str) -> str:
        """Create ``name`` (if new) with full permissions in it for the configured users, as the broker gives
        them on its configured vhosts (a vhost without permissions refuses connection.open with 530)."""
        if name not in self.broker.vhosts:
            self.broker.add_vhost(name)
            for user in self.config.users:
                self.broker.access.set_permission(user, name, ".*", ".*", ".*")
        return self.url_for(name)

    def delete_vhost(self, name: str) -> bool:
        """Close the vhost's connections with 320 "vhost 'x' is deleted", then delete it and its history."""
        deleted = self.broker.delete_vhost(name)
        if self._inspector is not None:
            self._inspector.forget_vhost(name)
        return deleted


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - platforms without uvloop
        return asyncio.new_event_loop()


class BrokerThread:
    """An `EmbeddedBroker` on its own loop (uvloop when installed) in a daemon thread, for sync tests and
    for async tests whose loop must not host the broker. `call`/`run` marshal work onto that loop.
    """

    def __init__(self, **options: Any) -> None:
        self.embedded = EmbeddedBroker(**options)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None
        self._started = concurrent.futures.Future[None]()

    def start(self, timeout: float = 10.0) -> Self:
        self._thread = threading.Thread(target=self._main, name="warrenmq-broker", daemon=True)
        self._thread.start()
        self._started.result(timeout)
        return self

    def _main(self) -> None:
        loop = self.loop = _new_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stopped = asyncio.Event()
        try:
            await self.embedded.start()
        except BaseException as error:
            self._started.set_exception(error)
            return
        self._started.set_result(None)
        await self._stopped.wait()
        await self.embedded.stop()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the broker (clients get 320) and join the thread."""
        thread, loop, stopped = self._thread, self.loop, self._stopped
        if thread is None or loop is None or stopped is None or not thread.is_alive():
            return
        loop.call_soon_threadsafe(stopped.set)
        thread.join(timeout)
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- marshalling

    def _loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None or self._thread is None:
            raise RuntimeError("the broker thread is not running")
        return self.loop

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the broker's loop and return its result (or raise its error)."""
        loop = self._loop()
        if threading.current_thread() is self._thread:
            return fn(*args, **kwargs)
        result = concurrent.futures.Future[T]()

        def invoke() -> None:
            try:
                result.set_result(fn(*args, **kwargs))
            except BaseException as error:
                result.set_exception(error)

        loop.call_soon_threadsafe(invoke)
        return result.result(CALL_TIMEOUT_S)

    def run(self, coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``coroutine()`` on the broker's loop, blocking this thread until it is done."""
        future = asyncio.run_coroutine_threadsafe(coroutine(), self._loop())
        return future.result(CALL_TIMEOUT_S)

    def run_async(self, coroutine: Callable[[], Coroutine[Any, Any, T]]) -> Awaitable[T]:
        """Run ``coroutine()`` on the broker's loop; await the result from another running loop."""
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine(), self._loop()))

    # -- the broker

    @property
    def url(self) -> str:
        return self.embedded.url

    def url_for(self, vhost: str) -> str:
        return self.embedded.url_for(vhost)

    @property
    def port(self) -> int:
        return self.embedded.port

    @property
    def host(self) -> str:
        return self.embedded.host

    @property
    def broker(self) -> Broker:
        """The core `Broker`. It belongs to the broker thread: read or change it through `call`."""
        return self.embedded.broker

    def vhost(self, name: str, create: bool = True) -> VhostHandle:
        """A handle on ``name`` (created unless ``create`` is False) for inspection, waits and faults."""
        if create:
            self.call(self.embedded.add_vhost, name)
        return VhostHandle(self, name)

    def delete_vhost(self, name: str) -> bool:
        return self.call(self.embedded.delete_vhost, name)

    def advance_clock(self, seconds: float) -> None:
        """Move the broker's manual clock forward (see `EmbeddedBroker.advance_clock`), on its loop."""
        self.call(self.embedded.advance_clock, seconds)

    def reseed_names(self, seed: int) -> None:
        """Restart the server-generated name sequence (deterministic `amq.gen-…` / `amq.ctag-…`)."""
        self.call(self.embedded.broker.names.reseed, seed)
