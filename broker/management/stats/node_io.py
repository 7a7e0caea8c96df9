"""/api/nodes' persister figures (RabbitMQ's file_handle_cache_stats: io_*, mnesia_*, msg_store_*,
queue_index_*) and its churn counters, read from the node's store writer, its spill files and the broker's
churn record at request time. docs/management.md ("Counters") says what each counts here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.storage.io_counters import IOCounters

if TYPE_CHECKING:
    from broker.server.server import Server

_CHURN = ("channel_closed", "channel_created", "connection_closed", "connection_created")
_QUEUE_CHURN = ("queue_created", "queue_declared", "queue_deleted")


def node_io(server: Server) -> IOCounters:
    """The store's and the spill files' counters together (a node with no data directory has neither)."""
    total = IOCounters()
    if server.writer is not None:
        total = total.add(server.writer.io)
    if server.pager is not None:
        total = total.add(server.pager.spills.io)
    return total


def persister_counts(server: Server) -> dict[str, Any]:
    io = node_io(server)
    churn = server.broker.churn
    counts: dict[str, Any] = {
        "io_read_avg_time": io.average_ms("read"),
        "io_read_bytes": io.read_bytes,
        "io_read_count": io.read_count,
        "io_sync_avg_time": io.average_ms("sync"),
        "io_sync_count": io.sync_count,
        "io_write_avg_time": io.average_ms("write"),
        "io_write_bytes": io.write_bytes,
        "io_write_count": io.write_count,
        # rabbit_misc:execute_mnesia_transaction counts a transaction that wrote Mnesia's disk log: here a
        # group commit that carried definitions (vhosts, users, exchanges, durable queues, bindings...).
        "mnesia_disk_tx_count": io.schema_disk_tx_count,
        "msg_store_read_count": io.msg_store_read_count,
        "msg_store_write_count": io.msg_store_write_count,
        "queue_index_read_count": io.queue_index_read_count,
        "queue_index_write_count": io.queue_index_write_count,
    }
    for name in _CHURN + _QUEUE_CHURN:
        counts[name] = getattr(churn, name)
    return counts
