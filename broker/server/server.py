"""The running node as its edges see it: the core ``Broker`` and the parts around it (store, alarms, pager,
journal), the AMQP listeners, and their lifetime: start() recovers and listens, stop() closes every client
with 320. Built from a configuration by the composition root, `broker.node`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from broker.config import ServerConfig
from broker.config.model import store_display
from broker.core.broker import Broker
from broker.core.model.clock import Clock
from broker.server.alarms import ResourceAlarms
from broker.server.amqp_protocol import AMQPProtocol
from broker.server.flow_control import FlowControl
from broker.server.ha_status import HAStatus
from broker.server.listener import AMQPListener, ListenerConfigError
from protocol import compiled

if TYPE_CHECKING:
    from broker.journal.service import JournalService
    from broker.server.amqp10_protocol import AMQP10Protocol
    from broker.server.paging import MemoryPager
    from broker.session.event_exchange import EventExchange
    from broker.session.faults import SessionFaults
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
        clock: Clock,
        broker: Broker,
        alarms: ResourceAlarms,
        store: Store | None = None,
        writer: StoreWriter | None = None,
    ) -> None:
        self.config = config
        self.loop = loop
        self.clock = clock
        self.broker = broker
        self.store = store
        self.writer = writer
        # Set by serve(): asks the process to stop (a failed store commit is fatal).
        self.request_stop: Callable[[], None] | None = None
        self.fatal: BaseException | None = None
        self.recovered: dict[str, int] | None = None
        self.connections: set[AMQPProtocol] = set()
        # Open AMQP 1.0 connections (broker.server.amqp10_protocol): each adds itself and discards itself.
        self.amqp10_connections: set[AMQP10Protocol] = set()
        self.listener = AMQPListener(self, config)
        # Resource alarms block publishers (broker.server.flow_control); sampling starts with start().
        self.flow = FlowControl()
        self.alarms = alarms
        # Past vm_memory_high_watermark_paging_ratio of the watermark, queues page bodies to spill files under
        # the data directory (broker.server.paging); an in-memory broker does not page.
        self.pager: MemoryPager | None = None
        self.journal: JournalService | None = None
        # Not attached at all when off: the topology emit sites then skip on ``events.observers``. Attached
        # once recovery is done, as the plugin's boot step follows rabbit's recovery: what the store brings
        # back is not news.
        self.event_exchange: EventExchange | None = None
        # Test fault injection (broker.testing.faults); None = off, and sessions skip every fault hook.
        self.faults: SessionFaults | None = None
        # High availability (broker/ha, a PostgreSQL store): this node's role; None when HA is off.
        self.ha: HAStatus | None = None

    @property
    def port(self) -> int:
        """The bound AMQP port once started."""
        return self.listener.port

    @property
    def ssl_port(self) -> int | None:
        """The bound AMQPS port once started (listeners.ssl.default)."""
        return self.listener.ssl_port

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
            log.info("recovered", store=store_display(self.config), **self.recovered)
        if self.event_exchange is not None:
            self.event_exchange.attach()
            self.event_exchange = None

    async def start(self) -> tuple[str, int]:
        self.recover()
        if self.journal is not None:
            self.journal.start()
        if self.config.planes:
            self.alarms.start()
        try:
            return await self.listener.start()
        except ListenerConfigError as error:
            raise StartupError(str(error)) from error

    def ready_fields(self, host: str, port: int) -> dict[str, Any]:
        """What the readiness line says of the listening node (both `broker.node` and `broker.node_ha`)."""
        return {
            "amqp_host": host,
            "amqp_port": port,
            "amqps_port": self.ssl_port,
            "recovered": self.recovered,
            "store": store_display(self.config),  # never the user or the password
            # "mypyc" or "pure": which variant of the compiled modules runs (protocol/compiled.py).
            "build": compiled.BUILD,
        }

    async def stop(self, grace_s: float = 2.0, reason: str = "shutdown") -> None:
        """Close every client with connection.close 320 (as `rabbitmqctl stop`), wait briefly, then unbind.
        ``reason`` goes into RabbitMQ's text ("broker forced connection closure with reason 'shutdown'")."""
        self.alarms.stop()
        self.listener.close()
        for protocol in list(self.connections):
            if protocol.session is not None:
                protocol.session.force_close(f"broker forced connection closure with reason '{reason}'")
            if protocol.reading_paused:
                protocol.release_reading()  # a blocked publisher's close-ok must be read
        for amqp10 in list(self.amqp10_connections):
            amqp10.connection.force_close(f"broker forced connection closure with reason '{reason}'")
        deadline = self.loop.time() + grace_s
        while (self.connections or self.amqp10_connections) and self.loop.time() < deadline:
            await asyncio.sleep(0.01)
        for protocol in list(self.connections):
            protocol.close()
        for amqp10 in list(self.amqp10_connections):
            amqp10.close()
        await self.listener.wait_closed()
        if self.journal is not None:
            self.journal.stop()
        self.close_store()

    def alarms_changed(self, reasons: tuple[str, ...]) -> None:
        self.flow.alarms_changed(reasons, [protocol.throttle for protocol in self.connections])
        for amqp10 in list(self.amqp10_connections):
            amqp10.connection.set_alarm(bool(reasons))

    def close_store(self) -> None:
        """Commit what is pending and close the store (idempotent)."""
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()

    def store_failed(self, error: BaseException) -> None:
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
