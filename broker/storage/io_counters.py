"""The node's file I/O as RabbitMQ's /api/nodes reports it (file_handle_cache_stats): operations, bytes and
times of the writes, syncs and reads WarrenMQ's store and spill files make, counted by whoever makes them,
once per operation or per group commit, never per message on the event loop.

What each figure counts here, next to what RabbitMQ's counts, is in docs/management.md ("Counters").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.storage.base import Batch, MessageRow

# RabbitMQ's queue_index_embed_msgs_below default: a persistent body at least this big goes to its message
# store, a smaller one into the queue index. WarrenMQ keeps every body in its store's message rows, so the
# split only says which of RabbitMQ's two counters the same message would have moved.
EMBED_MSGS_BELOW = 4096


class IOCounters:
    """Plain integers: bumped by one thread (the store's writer thread, or the event loop for spill files
    and recovery), read by the management plane at request time."""

    # A plain class, not a dataclass: a dataclass's methods are compiled at every start.
    __slots__ = (
        "msg_store_read_count",
        "msg_store_write_count",
        "queue_index_read_count",
        "queue_index_write_count",
        "read_bytes",
        "read_count",
        "read_s",
        "schema_disk_tx_count",
        "sync_count",
        "sync_s",
        "write_bytes",
        "write_count",
        "write_s",
    )

    def __init__(self) -> None:
        self.read_count = self.read_bytes = self.write_count = self.write_bytes = self.sync_count = 0
        self.read_s = self.write_s = self.sync_s = 0.0
        self.msg_store_read_count = self.msg_store_write_count = 0
        self.queue_index_read_count = self.queue_index_write_count = 0
        self.schema_disk_tx_count = 0

    def add(self, other: IOCounters) -> IOCounters:
        """A new record: this one plus ``other`` (the store's and the spill files' make the node's)."""
        total = IOCounters()
        for name in IOCounters.__slots__:
            setattr(total, name, getattr(self, name) + getattr(other, name))
        return total

    def average_ms(self, kind: str) -> float:
        """io_<kind>_avg_time: the mean time of one operation in milliseconds (0.0 before the first)."""
        count = getattr(self, f"{kind}_count")
        return getattr(self, f"{kind}_s") * 1000.0 / count if count else 0.0

    def commit(self, batches: list[Batch], elapsed_s: float, synced: bool) -> None:
        """One group commit applied (the writer thread): one write of its batches to the store, synced when
        the store syncs each commit (SQLite with fsync always: the write and its fsync are one call, so
        both are timed by the commit); a queue index write when it moved messages, a schema transaction
        per batch that carried definitions."""
        size = stored = 0
        moved = False
        for batch in batches:
            for row in batch.added.values():
                body = len(row[4])
                size += len(row[3]) + body
                stored += body >= EMBED_MSGS_BELOW
            for append in batch.stream_appends:
                size += len(append[6]) + len(append[7])
            moved = moved or bool(batch.added or batch.delivered or batch.removed or batch.counted)
            if batch.topology:
                self.schema_disk_tx_count += 1
        self.write_count += 1
        self.write_bytes += size
        self.write_s += elapsed_s
        if synced:
            self.sync_count += 1
            self.sync_s += elapsed_s
        if moved:
            self.queue_index_write_count += 1
        self.msg_store_write_count += stored

    def recovered(self, rows: list[MessageRow], elapsed_s: float) -> None:
        """One queue's messages read back at boot (one query): a queue index read, and the bodies RabbitMQ
        would have read from its message store."""
        size = stored = 0
        for row in rows:
            body = len(row[4])
            size += len(row[3]) + body
            stored += body >= EMBED_MSGS_BELOW
        self.read_count += 1
        self.read_bytes += size
        self.read_s += elapsed_s
        self.queue_index_read_count += 1
        self.msg_store_read_count += stored
