"""The listening socket, the broker's lifetime on one event loop, and clean shutdown on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import functools
import json
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from broker.config import ServerConfig
from broker.config.plugins import (
    EVENT_EXCHANGE,
    disabled_exchange_types,
    plugin_enabled,
    started_plugins,
    startup_complete_lines,
)
from broker.core.broker import Broker
from broker.core.model.clock import Clock
from broker.server.alarms import AlarmSources, ResourceAlarms
from broker.server.amqp_protocol import AMQPProtocol
from broker.server.clock import LoopClock
from broker.server.flow_control import FlowControl
from broker.server.runtime import pid_file, tune_for_serving
from broker.server.sockets import display_host, listen_socket
from broker.session.event_exchange import EventExchange
from broker.session.faults import SessionFaults
from protocol import compiled
from protocol.header_rewrite import rewrite_content_header

if TYPE_CHECKING:
    from broker.journal.service import JournalService
    from broker.server.paging import MemoryPager
    from broker.storage.base import Store
    from broker.storage.writer import StoreWriter

log = structlog.get_logger("warrenmq.server")


class StartupError(Exception):
    """An addon refused to start (e.g. a malformed definitions file); the message says what and where."""


class Server:
    """Owns the core ``Broker`` and the AMQP listener; start() binds, stop() closes every client with 320."""

    def __init__(
        self,
        config: ServerConfig,
        loop: asyncio.AbstractEventLoop,
        clock: Clock | None = None,
        store: Store | None = None,
        alarm_sources: AlarmSources | None = None,
    ) -> None:
        self.config = config
        self.loop = loop
        # Tests inject a ManualClock (broker.testing); the process uses the loop's clock.
        self.clock: Clock = clock if clock is not None else LoopClock(loop)
        # The durable store: the one given (an embedded broker's MemoryStore), SQLite under --data-dir, or
        # none.
        if store is None and config.data_dir is not None:
            # sqlite3 only for a data directory: `--data-dir none` starts without it (issue #29).
            from broker.storage.base import StorageError
            from broker.storage.sqlite import SqliteStore

            try:
                store = SqliteStore(config.data_dir, config.fsync)
            except StorageError as error:
                raise StartupError(str(error)) from error
        self.store = store
        self.writer: StoreWriter | None = None
        if store is not None:
            # The store's modules only with a store (an in-memory broker has none).
            from broker.storage.writer import StoreWriter

            self.writer = StoreWriter(store, loop.call_soon, loop.call_soon_threadsafe, self._store_failed)
        # Set by serve(): asks the process to stop (a failed store commit is fatal).
        self.request_stop: Callable[[], None] | None = None
        self.fatal: BaseException | None = None
        self.recovered: dict[str, int] | None = None
        self.broker = Broker(
            loop.call_soon,
            users=config.users,
            vhosts=config.vhosts,
            name_seed=config.name_seed,
            clock=self.clock,
            profile=config.profile,
            rewrite_header=rewrite_content_header,
            persistence=self.writer,
        )
        self.broker.disable_exchange_types(disabled_exchange_types(config.enabled_plugins))
        self.broker.access.enforced = config.planes
        self.connections: set[AMQPProtocol] = set()
        self._server: asyncio.Server | None = None
        # Resource alarms block publishers (broker.server.flow_control); sampling starts with start().
        self.flow = FlowControl()
        self.alarms = ResourceAlarms(
            self.clock,
            config.vm_memory_high_watermark,
            config.disk_free_limit,
            config.data_dir,
            self._alarms_changed,
            alarm_sources,
        )
        # Past vm_memory_high_watermark_paging_ratio of the watermark, queues page bodies to spill files under
        # the data directory (broker.server.paging); an in-memory broker does not page.
        self.pager: MemoryPager | None = None
        ratio = config.vm_memory_high_watermark_paging_ratio
        if config.data_dir is not None and ratio <= 1:
            from broker.server.paging import MemoryPager

            alarms = self.alarms
            self.pager = MemoryPager(
                self.broker,
                config.data_dir,
                ratio,
                self.clock.monotonic_s,
                alarms.trim_heap,
                disk_low=lambda: alarms.disk_alarm,
            )
            self.alarms.on_memory = self.pager.sampled
        self.journal: JournalService | None = None
        if config.journal is not None:
            # The journal's modules only when it is on: it is off by default (issue #29).
            from broker.journal.service import JournalService

            self.journal = JournalService(config.journal, self.broker.events, loop)
        # Not attached at all when off: the topology emit sites then skip on ``events.observers``. Attached
        # once recovery is done, as the plugin's boot step follows rabbit's recovery: what the store brings
        # back is not news.
        self._event_exchange: EventExchange | None = None
        if plugin_enabled(config.enabled_plugins, EVENT_EXCHANGE):
            self._event_exchange = EventExchange(
                self.broker, self.clock, config.event_exchange_vhost, config.node_name
            )
        self.port = 0  # the bound AMQP port once started
        self.ssl_port: int | None = None  # the bound AMQPS port once started (listeners.ssl.default)
        self._tls_server: asyncio.Server | None = None
        # Test fault injection (broker.testing.faults); None = off, and sessions skip every fault hook.
        self.faults: SessionFaults | None = None

    def recover(self) -> None:
        """Bring back what the store holds; before definitions are applied and before anyone connects
        (idempotent: start() calls it too)."""
        if self.store is not None and self.writer is not None and self.recovered is None:
            from broker.storage.base import StorageError
            from broker.storage.recovery import recover

            try:
                report = recover(self.broker, self.store, self.writer)
            except StorageError as error:
                raise StartupError(str(error)) from error
            self.recovered = report.fields()
            log.info("recovered", data_dir=self.config.data_dir, **self.recovered)
        if self._event_exchange is not None:
            self._event_exchange.attach()
            self._event_exchange = None

    async def start(self) -> tuple[str, int]:
        self.recover()
        if self.journal is not None:
            self.journal.start()
        if self.config.planes:
            self.alarms.start()
        self._server = await self.loop.create_server(
            lambda: AMQPProtocol(self), sock=listen_socket(self.config.host, self.config.port)
        )
        host, port = self._server.sockets[0].getsockname()[:2]
        self.port = int(port)
        if self.config.ssl_port is not None:
            await self._start_tls()
        return str(host), int(port)

    async def _start_tls(self) -> None:
        """The AMQPS listener (``broker.server.tls``), with ssl_handshake_timeout."""
        assert self.config.ssl_port is not None
        # broker.server.tls only for an AMQPS listener: start-up without one does not import it (issue #29).
        from broker.server.tls import TLSConfigError, server_context

        try:
            context = server_context(self.config.ssl_options)
        except TLSConfigError as error:
            raise StartupError(str(error)) from error
        self._tls_server = await self.loop.create_server(
            lambda: AMQPProtocol(self),
            sock=listen_socket(self.config.host, self.config.ssl_port),
            ssl=context,
            ssl_handshake_timeout=self.config.ssl_handshake_timeout_s,
        )
        self.ssl_port = int(self._tls_server.sockets[0].getsockname()[1])
        log.info("amqps_listening", port=self.ssl_port, verify=self.config.ssl_options.verify)

    async def stop(self, grace_s: float = 2.0) -> None:
        """Close every client with connection.close 320 (as `rabbitmqctl stop`), wait briefly, then unbind."""
        self.alarms.stop()
        if self._server is not None:
            self._server.close()
        if self._tls_server is not None:
            self._tls_server.close()
        for protocol in list(self.connections):
            if protocol.session is not None:
                protocol.session.force_close()
            if protocol.reading_paused:
                protocol.release_reading()  # a blocked publisher's close-ok must be read
        deadline = self.loop.time() + grace_s
        while self.connections and self.loop.time() < deadline:
            await asyncio.sleep(0.01)
        for protocol in list(self.connections):
            protocol.close()
        if self._server is not None:
            await self._server.wait_closed()
        if self._tls_server is not None:
            await self._tls_server.wait_closed()
        if self.journal is not None:
            self.journal.stop()
        self.close_store()

    def _alarms_changed(self, reasons: tuple[str, ...]) -> None:
        self.flow.alarms_changed(reasons, [protocol.throttle for protocol in self.connections])

    def close_store(self) -> None:
        """Commit what is pending and close the store (idempotent)."""
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()

    def _store_failed(self, error: BaseException) -> None:
        """A commit failed (disk full, I/O error): confirms for it are never sent; stop the broker."""
        self.fatal = error
        log.critical("store_failed", error=repr(error))
        if self.request_stop is not None:
            self.request_stop()


class Addon(Protocol):
    """Something the `serve` process runs beside the AMQP listener (definitions, management HTTP)."""

    async def before_listen(self, server: Server) -> None:
        """Called before the AMQP port is bound: nothing can connect yet."""
        ...

    async def after_listen(self, server: Server) -> dict[str, Any]:
        """Called once the AMQP port is bound; returns fields for the readiness line."""
        ...

    async def stop(self) -> None:
        """Called on SIGTERM/SIGINT before clients are closed."""
        ...


async def serve(
    config: ServerConfig,
    on_ready: Callable[[dict[str, Any]], None] | None = None,
    addons: Sequence[Addon] = (),
) -> None:
    """Run until SIGTERM or SIGINT, then shut down cleanly."""
    loop = asyncio.get_running_loop()
    server = Server(config, loop)
    try:
        server.recover()
        for addon in addons:
            await addon.before_listen(server)
        host, port = await server.start()
    except BaseException:
        server.close_store()
        raise
    ready: dict[str, Any] = {
        "amqp_host": host,
        "amqp_port": port,
        "amqps_port": server.ssl_port,
        "management_port": None,
        "recovered": server.recovered,
        # "mypyc" or "pure": which variant of the compiled modules runs (protocol/compiled.py).
        "build": compiled.BUILD,
    }
    for addon in addons:
        ready.update(await addon.after_listen(server))
    stop = asyncio.Event()
    server.request_stop = stop.set
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info(
        "listening",
        host=host,
        port=port,
        vhosts=list(config.vhosts),
        users=sorted(config.users),
        build=compiled.describe(),
    )
    if on_ready is not None:
        on_ready(ready)
    await stop.wait()
    log.info("shutting_down", connections=len(server.connections))
    for addon in reversed(addons):
        await addon.stop()
    await server.stop()
    log.info("stopped")
    if server.fatal is not None:
        raise StartupError(f"stopped: the store failed to commit: {server.fatal!r}")


def report_ready(ready: dict[str, Any], plugins: Sequence[str] = ()) -> None:
    """The JSON line on stdout that scripts and fixtures wait for (`--port 0` tells them the port), first;
    then RabbitMQ's own "Server startup complete" line and plugin list, which Testcontainers waits for."""
    host, port = ready["amqp_host"], ready["amqp_port"]
    print(json.dumps({"event": "ready", **ready, "url": f"amqp://{display_host(host)}:{port}/"}), flush=True)
    print("\n".join(startup_complete_lines(plugins)), flush=True)


def run(config: ServerConfig, addons: Sequence[Addon] = ()) -> int:
    if config.journal is not None:
        from broker.journal.service import preload  # only when on (see Server.__init__)

        preload(config.journal)  # before the freeze below, which then covers the journal's libraries
    tune_for_serving()
    try:
        import uvloop

        runner: Callable[..., None] = uvloop.run
    except ImportError:  # pragma: no cover - platforms without uvloop
        runner = asyncio.run
    try:
        plugins = started_plugins(config.enabled_plugins)
        with pid_file(config.pid_file):
            runner(serve(config, functools.partial(report_ready, plugins=plugins), addons))
    except OSError as error:
        if error.filename is not None:  # the data directory or the pid file, not a listener
            print(f"warrenmq: {error.filename}: {error.strerror}", file=sys.stderr)
        else:
            print(f"warrenmq: cannot listen on {config.host}:{config.port}: {error}", file=sys.stderr)
        return 1
    except StartupError as error:
        print(f"warrenmq: {error}", file=sys.stderr)
        return 1
    return 0
