"""The composition root: builds a node from its configuration (store, core, alarms, pager, journal, event
exchange, AMQP listeners, management addons) and runs it until SIGTERM/SIGINT. Everything that assembles
parts lives here; the parts themselves know only the layers below them."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from broker.server.clock import LoopClock
from broker.server.runtime import pid_file, tune_for_serving
from broker.server.server import Addon, Server, StartupError
from broker.server.sockets import display_address
from protocol import compiled
from protocol.header_rewrite import rewrite_content_header

if TYPE_CHECKING:
    from broker.storage.base import Store
    from broker.storage.writer import StoreWriter

log = structlog.get_logger("warrenmq.server")


def build_node(
    config: ServerConfig,
    loop: asyncio.AbstractEventLoop,
    clock: Clock | None = None,
    store: Store | None = None,
    alarm_sources: AlarmSources | None = None,
) -> Server:
    """A node for ``config``, not yet recovered nor listening. Tests inject a ManualClock (broker.testing);
    the process uses the loop's clock. The store: the one given (an embedded broker's MemoryStore), SQLite
    under the data directory, or none."""
    clock = clock if clock is not None else LoopClock(loop)
    if store is None and config.store is not None:
        # asyncpg only with a PostgreSQL store : start-up imports stay those of SQLite's.
        from broker.storage.base import StorageError
        from broker.storage.postgres.store import PostgresStore

        try:
            store = PostgresStore(config.store, config.ha_lease_s)
        except StorageError as error:
            raise StartupError(str(error)) from error
    elif store is None and config.data_dir is not None:
        # sqlite3 only for a data directory: `--data-dir none` starts without it.
        from broker.storage.base import StorageError
        from broker.storage.sqlite import SqliteStore

        try:
            store = SqliteStore(config.data_dir, config.fsync)
        except StorageError as error:
            raise StartupError(str(error)) from error
    # The writer and the alarms report to the node built below (a failed commit stops it; alarms block
    # its publishers): their callbacks find it once it exists.
    node: Server | None = None

    def store_failed(error: BaseException) -> None:
        assert node is not None
        node.store_failed(error)

    def alarms_changed(reasons: tuple[str, ...]) -> None:
        assert node is not None
        node.alarms_changed(reasons)

    def store_outage(unreachable: bool) -> None:
        assert node is not None
        node.alarms.store_outage(unreachable)

    writer: StoreWriter | None = None
    if store is not None:
        # The store's modules only with a store (an in-memory broker has none).
        from broker.storage.writer import StoreWriter

        writer = StoreWriter(store, loop.call_soon, loop.call_soon_threadsafe, store_failed, store_outage)
    broker = Broker(
        loop.call_soon,
        users=config.users,
        vhosts=config.vhosts,
        name_seed=config.name_seed,
        clock=clock,
        profile=config.profile,
        rewrite_header=rewrite_content_header,
        persistence=writer,
    )
    broker.disable_exchange_types(disabled_exchange_types(config.enabled_plugins))
    broker.access.enforced = config.planes
    alarms = ResourceAlarms(
        clock,
        config.vm_memory_high_watermark,
        config.disk_free_limit,
        config.data_dir,
        alarms_changed,
        alarm_sources,
        node_name=config.node_name or "rabbit@localhost",
    )
    node = Server(config, loop, clock, broker, alarms, store, writer)
    ratio = config.vm_memory_high_watermark_paging_ratio
    if config.data_dir is not None and ratio <= 1:
        from broker.server.paging import MemoryPager

        node.pager = MemoryPager(
            broker,
            config.data_dir,
            ratio,
            clock.monotonic_s,
            alarms.trim_heap,
            disk_low=lambda: alarms.disk_alarm,
        )
        alarms.on_memory = node.pager.sampled
    if config.journal is not None:
        # The journal's modules only when it is on (off by default): start-up imports only what it uses.
        from broker.journal.service import JournalService

        node.journal = JournalService(config.journal, broker.events, loop)
    if plugin_enabled(config.enabled_plugins, EVENT_EXCHANGE):
        from broker.session.event_exchange import EventExchange  # only when enabled, not at every start

        node.event_exchange = EventExchange(broker, clock, config.event_exchange_vhost, config.node_name)
    return node


async def serve(
    config: ServerConfig,
    on_ready: Callable[[dict[str, Any]], None] | None = None,
    addons: Sequence[Addon] = (),
) -> None:
    """Run until SIGTERM or SIGINT, then shut down cleanly."""
    loop = asyncio.get_running_loop()
    server = build_node(config, loop)
    dsn = ha_dsn(config)
    if dsn is not None:
        from broker.node_ha import serve_ha  # only with a PostgreSQL store (asyncpg)

        await serve_ha(server, dsn, on_ready, addons, _stop_event(server, loop))
        return
    try:
        server.recover()
        for addon in addons:
            await addon.before_listen(server)
        host, port = await server.start()
    except BaseException:
        server.close_store()
        raise
    ready: dict[str, Any] = {"management_port": None, **server.ready_fields(host, port)}
    for addon in addons:
        ready.update(await addon.after_listen(server))
    stop = _stop_event(server, loop)
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


def _stop_event(server: Server, loop: asyncio.AbstractEventLoop) -> asyncio.Event:
    """Set by SIGTERM/SIGINT, or by the node itself (a failed store commit)."""
    stop = asyncio.Event()
    server.request_stop = stop.set
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def ha_dsn(config: ServerConfig) -> str | None:
    """High availability is on whenever the store is PostgreSQL (broker/ha): a store that two nodes can
    open must never have two writers, so there is no unfenced mode to choose. The DSN, or None."""
    return config.store  # `--store postgresql://...` (broker/storage/postgres); None: SQLite or memory


def report_ready(ready: dict[str, Any], plugins: Sequence[str] = ()) -> None:
    """The JSON line on stdout that scripts and fixtures wait for (`--port 0` tells them the port), first;
    then RabbitMQ's own "Server startup complete" line and plugin list, which Testcontainers waits for."""
    url = f"amqp://{display_address(ready['amqp_host'], ready['amqp_port'])}/"
    print(json.dumps({"event": "ready", **ready, "url": url}), flush=True)
    print("\n".join(startup_complete_lines(plugins)), flush=True)


# The ready line's ports by RabbitMQ's listener protocol names (what the node registry records).
_READY_PORTS = {
    "amqp_port": "amqp",
    "amqps_port": "amqp/ssl",
    "dist_port": "clustering",
    "management_port": "http",
    "management_ssl_port": "https",
    "prometheus_port": "http/prometheus",
}


class Registration:
    """The node's entry in the machine's node registry (broker/config/node_registry.py), written when it is
    ready, before the ready line (a script that waited for the line finds the node), removed at exit. A
    registry that cannot be written costs the CLIs their lookup, not the node its start."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.path: Path | None = None

    def ready(self, ready: dict[str, Any]) -> None:
        from broker.config import node_registry

        ports = {protocol: ready[key] for key, protocol in _READY_PORTS.items() if ready.get(key)}
        try:
            self.path = node_registry.register(self.config.node_name, self.config.host, ports)
        except OSError as error:
            log.warning("node_registry_unavailable", node=self.config.node_name, error=str(error))

    def __enter__(self) -> Registration:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.path is not None:
            from broker.config import node_registry

            node_registry.unregister(self.path)


def run(config: ServerConfig, addons: Sequence[Addon] | None = None) -> int:
    """Serve ``config`` until SIGTERM/SIGINT with its addons (definitions, management, Prometheus, the CLI
    channel; those ``config`` turns on unless given): the process's exit status."""
    if addons is None:
        from broker.management.addons import addons_for

        addons = addons_for(config)
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
        with pid_file(config.pid_file), Registration(config) as registration:

            def ready(fields: dict[str, Any]) -> None:
                registration.ready(fields)
                report_ready(fields, plugins)

            runner(serve(config, ready, addons))
    except OSError as error:
        if error.filename is not None:  # the data directory or the pid file, not a listener
            print(f"warrenmq: {error.filename}: {error.strerror}", file=sys.stderr)
        else:
            address = display_address(config.host, config.port)
            print(f"warrenmq: cannot listen on {address}: {error}", file=sys.stderr)
        return 1
    except StartupError as error:
        print(f"warrenmq: {error}", file=sys.stderr)
        return 1
    return 0
