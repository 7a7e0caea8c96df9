"""A node of a high-availability pair on a PostgreSQL store (broker/ha): its lifetime from standby to active
to stopped. Part of the composition root (broker.node calls it when the store is PostgreSQL).

standby: management, Prometheus and the CLI channel answer (health checks 503), no AMQP listener, the store
fenced with epoch 0 so that nothing a standby does can commit. Elected: the store is fenced with the new
epoch, then the node recovers, applies definitions and opens its AMQP listeners (log line ``active``).
Deposed (a renewal found another epoch, the lease ran out unrenewed, or a commit raised StoreFenced): every
client is closed with 320 CONNECTION_FORCED, the listeners stop, and the process exits with status 1 for its
supervisor (systemd, Docker's restart policy, Kubernetes) to start it again as a standby. Exiting rather than
going back to standby in place drops every in-memory queue, message and channel with certainty, and costs a
start (~0.2 s), well inside a lease."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import structlog

from broker.config.model import store_display
from broker.ha.leadership import Leadership, LostLeadership
from broker.server.ha_status import HAStatus, NodeRole
from broker.server.server import Addon, Server, StartupError
from broker.storage.base import StorageError, StoreFenced
from protocol import compiled

log = structlog.get_logger("warrenmq.ha")

# No election grants epoch 0 (the first is 1): a store fenced with it refuses every commit.
STANDBY_EPOCH = 0


# A deposed node that cannot finish its shutdown within this long (a commit stuck on a partitioned network
# holds the writer thread, which the shutdown joins) exits anyway: nothing it still holds may be confirmed,
# and the fence refuses its commit should it ever reach the database.
DEPOSED_EXIT_S = 15.0


def _exit_if_stuck() -> None:
    def exit_now() -> None:
        log.critical("deposed_shutdown_stuck", exit_after_s=DEPOSED_EXIT_S)
        os._exit(1)

    timer = threading.Timer(DEPOSED_EXIT_S, exit_now)
    timer.daemon = True
    timer.start()


def _fence(server: Server, epoch: int) -> None:
    fence: Callable[[int | None], None] | None = getattr(server.store, "fence", None)
    if fence is None:
        raise StartupError("high availability needs a store that fences its commits (PostgreSQL)")
    fence(epoch)


async def serve_ha(
    server: Server,
    dsn: str,
    on_ready: Callable[[dict[str, Any]], None] | None,
    addons: Sequence[Addon],
    stop: asyncio.Event,
) -> None:
    """Standby until elected, active until stopped or deposed; raises StartupError when deposed (the
    process exits 1 and its supervisor restarts it as a standby)."""
    config = server.config
    status = server.ha = HAStatus(lease_s=config.ha_lease_s)
    leadership = Leadership(dsn, f"{config.node_name} pid {os.getpid()}", config.ha_lease_s)
    deposed: str | None = None
    writer = server.writer
    if writer is None:
        raise StartupError("high availability needs the PostgreSQL store")
    writer.held = True  # what the node's construction wrote waits for the election
    try:
        _fence(server, STANDBY_EPOCH)
        where = store_display(config)  # postgresql://host:port/db: never the user or the password
        ready: dict[str, Any] = {"management_port": None, "role": "standby", "store": where}
        for addon in addons:
            ready.update(await addon.after_listen(server))
        log.info("standby", store=where, lease_s=config.ha_lease_s, node=config.node_name)
        print(json.dumps({"event": "standby", **ready}), flush=True)
        elected = asyncio.ensure_future(leadership.campaign())
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait((elected, stopped), return_when=asyncio.FIRST_COMPLETED)
        if not elected.done():
            elected.cancel()
            for addon in reversed(addons):
                await addon.stop()
            log.info("stopped", role="standby")
            return
        epoch = elected.result()
        _fence(server, epoch)
        status.role, status.epoch = NodeRole.ACTIVE, epoch
        writer.release()  # flushed after recovery, as a single node's first batch is
        server.recover()
        for addon in addons:
            await addon.before_listen(server)
        host, port = await server.start()
        ready.update(server.ready_fields(host, port), role="active", epoch=epoch)
        log.info("active", epoch=epoch, host=host, port=port, store=where, build=compiled.describe())
        if on_ready is not None:
            on_ready(ready)
        held = asyncio.ensure_future(leadership.hold())
        await asyncio.wait((held, stopped), return_when=asyncio.FIRST_COMPLETED)
        if held.done():
            stopped.cancel()
            lost = held.result()
            deposed = lost.value
            log.warning(
                "deposed" if lost is LostLeadership.DEPOSED else "lease_lost",
                epoch=epoch,
                reason=lost.value,
                lease_s=config.ha_lease_s,
            )
        else:
            held.cancel()
            if isinstance(server.fatal, StoreFenced):
                deposed = "fenced"
                log.warning("deposed", epoch=epoch, reason="a commit found a newer epoch in the store")
        status.role = NodeRole.STANDBY
        if deposed is not None:
            _exit_if_stuck()
        log.info("shutting_down", connections=len(server.connections))
        for addon in reversed(addons):
            await addon.stop()
        try:
            await server.stop(reason="deposed" if deposed else "shutdown")
        except StorageError as error:  # the last commit on stop, refused by a successor's fence
            deposed = deposed or "fenced"
            log.warning("deposed", epoch=epoch, reason=repr(error))
        if deposed is None and server.fatal is None:
            await leadership.resign()  # after the last commit: the standby need not wait for the lease
    finally:
        try:
            server.close_store()
        except StorageError as error:
            log.warning("store_close_failed", error=repr(error))
        await leadership.close()
    if deposed is not None:
        raise StartupError(f"deposed ({deposed}): no longer the active node; exiting to restart as a standby")
    log.info("stopped")
    if server.fatal is not None:
        raise StartupError(f"stopped: the store failed to commit: {server.fatal!r}")
