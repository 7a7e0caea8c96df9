"""A store that lives in the process: same semantics as SQLite, no files. An embedded broker restarted with
the same `MemoryStore` recovers its durable state, which lets tests exercise recovery without a disk."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from broker.core.queues.stream_disk import StreamDisk
from broker.storage.base import (
    KEY_SEQ_BITS,
    Batch,
    BindingRow,
    Definitions,
    DelayedRow,
    ExchangeRow,
    MessageRow,
    ParameterRow,
    PermissionRow,
    QueueRow,
    TopicPermissionRow,
    UserRow,
    queue_key_range,
)
from broker.storage.stream_files import StoredSegment, StreamRecord, snapshot_offsets


class MemoryStore:
    threaded = False
    on_disk = False  # writes nothing to a file: the node's io_* counters stay as they are

    def __init__(self) -> None:
        self.vhosts: dict[str, None] = {}
        self.users: dict[str, UserRow] = {}
        self.permissions: dict[tuple[str, str], PermissionRow] = {}
        self.topic_permissions: dict[tuple[str, str, str], TopicPermissionRow] = {}
        self.vhost_metadata: dict[str, str] = {}
        self.exchanges: dict[tuple[str, str], ExchangeRow] = {}
        self.queues: dict[int, QueueRow] = {}
        self.bindings: dict[BindingRow, None] = {}
        self.rows: dict[int, MessageRow] = {}
        self.parameters: dict[tuple[str, str, str], ParameterRow] = {}
        self.streams: dict[int, dict[int, list[StreamRecord]]] = {}  # queue id -> segment first -> entries
        self.counts: dict[int, int] = {}  # quorum delivery counts by message key
        self.delayed: dict[int, DelayedRow] = {}
        self.clean = True  # a new store has nothing to distrust
        self.commits = 0

    def begin(self) -> bool:
        clean, self.clean = self.clean, False
        return clean

    def delivery_counts(self, queue_id: int) -> dict[int, int]:
        low, high = queue_key_range(queue_id)
        return {key: count for key, count in self.counts.items() if low <= key < high and key in self.rows}

    def delayed_messages(self) -> Iterator[DelayedRow]:
        return iter(sorted(self.delayed.values(), key=lambda row: (row[3], row[0])))

    def max_delayed_key(self) -> int:
        return max(self.delayed, default=0)

    def load(self) -> Definitions:
        return Definitions(
            list(self.vhosts),
            list(self.users.values()),
            list(self.exchanges.values()),
            sorted(self.queues.values(), key=lambda row: row.id),
            list(self.bindings),
            [self.parameters[key] for key in sorted(self.parameters)],
            list(self.permissions.values()),
            list(self.topic_permissions.values()),
            dict(self.vhost_metadata),
        )

    def messages(self, queue_id: int) -> Iterator[MessageRow]:
        low, high = queue_key_range(queue_id)
        return iter(sorted((row for key, row in self.rows.items() if low <= key < high), key=lambda r: r[0]))

    def max_queue_id(self) -> int:
        # As SqliteStore: a queue id that still has stored messages is taken, even without its queue row.
        return max(max(self.queues, default=0), max(self.rows, default=0) >> KEY_SEQ_BITS)

    def stream_segments(self, queue_id: int) -> Iterator[StoredSegment]:
        segments = self.streams.get(queue_id, {})
        return iter(
            [
                (first, snapshot_offsets(first, segments[first]), list(segments[first]))
                for first in sorted(segments)
            ]
        )

    def stream_disk(self, queue_id: int) -> StreamDisk | None:
        return None  # nothing on disk: a stream's log keeps every segment in memory

    def apply(self, batch: Batch) -> None:
        for op, row in batch.topology:
            self._topology(op, row)
        self.rows.update(batch.added)
        for key in batch.added:
            self.counts.pop(key, None)  # as SQLite's INSERT OR REPLACE resets the column
        for key in batch.delivered:
            stored = self.rows.get(key)
            if stored is not None:
                self.rows[key] = (*stored[:6], 1)
        for key, (count, delivered) in batch.counted.items():
            stored = self.rows.get(key)
            if stored is not None:
                self.rows[key] = (*stored[:6], delivered)
                self.counts[key] = count
        self.delayed.update(batch.delayed_added)
        for key in batch.delayed_removed:
            self.delayed.pop(key, None)
        for key in batch.removed:
            self.rows.pop(key, None)
            self.counts.pop(key, None)
        for queue_id, first, *record in batch.stream_appends:
            self.streams.setdefault(queue_id, {}).setdefault(first, []).append(tuple(record))  # type: ignore[arg-type]
        for queue_id, first in batch.stream_rolls:
            self.streams.setdefault(queue_id, {}).setdefault(first, [])
        for queue_id, first in batch.stream_dropped:
            self.streams.get(queue_id, {}).pop(first, None)
        for queue_id in batch.dropped_queues:
            self._drop_messages(queue_id)
        self.commits += 1

    def _topology(self, op: str, row: tuple[Any, ...]) -> None:
        if op == "vhost+":
            self.vhosts[str(row[0])] = None
        elif op == "vhost-":
            self._delete_vhost(str(row[0]))
        elif op == "vhost~":
            if row[0] in self.vhosts:
                self.vhost_metadata[str(row[0])] = str(row[1])
        elif op == "user+":
            self.users[str(row[0])] = UserRow(*row)
        elif op == "user-":
            self.users.pop(str(row[0]), None)
            self.permissions = {key: p for key, p in self.permissions.items() if key[0] != row[0]}
            self.topic_permissions = {key: t for key, t in self.topic_permissions.items() if key[0] != row[0]}
        elif op == "permission+":
            self.permissions[(str(row[0]), str(row[1]))] = PermissionRow(*row)
        elif op == "permission-":
            self.permissions.pop((str(row[0]), str(row[1])), None)
        elif op == "topic_permission+":
            self.topic_permissions[(str(row[0]), str(row[1]), str(row[2]))] = TopicPermissionRow(*row)
        elif op == "topic_permission-":
            self.topic_permissions.pop((str(row[0]), str(row[1]), str(row[2])), None)
        elif op == "exchange+":
            self.exchanges[(str(row[0]), str(row[1]))] = ExchangeRow(*row)
        elif op == "exchange-":
            self.exchanges.pop((str(row[0]), str(row[1])), None)
            self.delayed = {key: d for key, d in self.delayed.items() if (d[1], d[2]) != (row[0], row[1])}
        elif op == "queue+":
            self.queues[int(row[0])] = QueueRow(*row)
        elif op == "queue~":
            queue = self.queues.get(int(row[0]))
            if queue is not None:
                self.queues[queue.id] = queue._replace(had_consumer=1)
        elif op == "queue-":
            gone = self.queues.pop(int(row[0]), None)
            self._drop_messages(int(row[0]))
            if gone is not None:
                self.bindings = {
                    binding: None
                    for binding in self.bindings
                    if not (
                        binding.destination_type == "queue"
                        and (binding.vhost, binding.destination) == (gone.vhost, gone.name)
                    )
                }
        elif op == "parameter+":
            self.parameters[(str(row[0]), str(row[1]), str(row[2]))] = ParameterRow(*row)
        elif op == "parameter-":
            self.parameters.pop((str(row[0]), str(row[1]), str(row[2])), None)
        elif op == "binding+":
            self.bindings[BindingRow(*row)] = None
        elif op == "binding-":
            self.bindings.pop(BindingRow(*row), None)
        else:  # pragma: no cover - the writer only emits the ops above
            raise ValueError(f"unknown store operation {op!r}")

    def _delete_vhost(self, name: str) -> None:
        self.vhosts.pop(name, None)
        self.vhost_metadata.pop(name, None)
        self.permissions = {key: p for key, p in self.permissions.items() if key[1] != name}
        self.topic_permissions = {key: t for key, t in self.topic_permissions.items() if key[1] != name}
        self.exchanges = {key: row for key, row in self.exchanges.items() if row.vhost != name}
        self.bindings = {row: None for row in self.bindings if row.vhost != name}
        self.parameters = {key: row for key, row in self.parameters.items() if row.vhost != name}
        self.delayed = {key: row for key, row in self.delayed.items() if row[1] != name}
        for queue in [queue for queue in self.queues.values() if queue.vhost == name]:
            del self.queues[queue.id]
            self._drop_messages(queue.id)

    def _drop_messages(self, queue_id: int) -> None:
        self.streams.pop(queue_id, None)
        low, high = queue_key_range(queue_id)
        for key in [key for key in self.rows if low <= key < high]:
            del self.rows[key]

    def close(self, clean: bool = True) -> None:
        """Nothing to release: the state stays for a broker started later with this store."""
        self.clean = clean
