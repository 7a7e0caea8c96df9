"""The `Persistence` write methods of the group commit (broker.storage.writer.StoreWriter): each change the
core reports becomes a row in the batch being gathered (``_batch``), cancelled out against the same batch's
earlier rows where it can (a message published and acked in one loop turn is never written)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from broker.core.model.typed_json import encode_table
from broker.core.topology.persistence import CommitWaiter
from broker.storage.base import KEY_SEQ_BITS, Batch, Store

if TYPE_CHECKING:
    from broker.core.exchanges.bindings import Binding
    from broker.core.exchanges.exchange import Exchange
    from broker.core.model.message import Message
    from broker.core.queues.queue import Envelope, Queue
    from broker.core.queues.stream_disk import StreamDisk

CallSoon = Callable[[Callable[[], None]], Any]


def _sorted_table(table: dict[str, Any]) -> str:
    """Binding arguments as a key: binding twice with the same arguments in another order is one binding."""
    return encode_table(dict(sorted(table.items()))) or "[]"


class _Committed:
    """A plain callback as a `CommitWaiter`."""

    __slots__ = ("_callback",)

    def __init__(self, callback: Callable[[], None]) -> None:
        self._callback = callback

    def committed(self) -> None:
        self._callback()


class BatchWrites:
    """Gathers writes into ``_batch``; the subclass commits it (``_dirty`` schedules that, ``on_commit``
    registers a waiter)."""

    store: Store
    writes: int
    replaying: bool
    _batch: Batch
    _flush_scheduled: bool
    _call_soon: CallSoon
    _next_queue_id: int
    _next_delayed_key: int

    def _flush(self) -> None:
        raise NotImplementedError

    def _dirty(self) -> None:
        raise NotImplementedError

    def on_commit(self, batch_id: int, waiter: CommitWaiter) -> None:
        raise NotImplementedError

    # -- Persistence: topology

    def _topology(self, op: str, row: tuple[Any, ...]) -> None:
        if self.replaying:
            return
        self._batch.topology.append((op, row))
        self._dirty()

    def vhost_added(self, name: str) -> None:
        self._topology("vhost+", (name,))

    def vhost_deleted(self, name: str) -> None:
        self._topology("vhost-", (name,))

    def vhost_metadata_saved(self, name: str, metadata: Mapping[str, Any]) -> None:
        self._topology("vhost~", (name, json.dumps(dict(metadata), sort_keys=True)))

    def user_saved(
        self,
        name: str,
        password: str | None,
        password_hash: tuple[str, str] | None,
        tags: tuple[str, ...] = (),
    ) -> None:
        hashed, algorithm = password_hash if password_hash is not None else (None, None)
        row = (name, password if password_hash is None else None, hashed, algorithm, json.dumps(list(tags)))
        self._topology("user+", row)

    def user_deleted(self, name: str) -> None:
        self._topology("user-", (name,))

    def permission_saved(self, user: str, vhost: str, configure: str, write: str, read: str) -> None:
        self._topology("permission+", (user, vhost, configure, write, read))

    def permission_cleared(self, user: str, vhost: str) -> None:
        self._topology("permission-", (user, vhost))

    def topic_permission_saved(self, user: str, vhost: str, exchange: str, write: str, read: str) -> None:
        self._topology("topic_permission+", (user, vhost, exchange, write, read))

    def topic_permission_cleared(self, user: str, vhost: str, exchange: str) -> None:
        self._topology("topic_permission-", (user, vhost, exchange))

    def parameter_saved(self, vhost: str, component: str, name: str, value: Any) -> None:
        if value is None:
            self._topology("parameter-", (vhost, component, name))
        else:
            self._topology("parameter+", (vhost, component, name, json.dumps(value)))

    def exchange_declared(self, vhost: str, exchange: Exchange) -> None:
        row = (
            vhost,
            exchange.name,
            exchange.type_name,
            int(exchange.auto_delete),
            int(exchange.internal),
            encode_table(exchange.arguments),
        )
        self._topology("exchange+", row)

    def exchange_deleted(self, vhost: str, exchange: Exchange) -> None:
        # Its delayed messages go with it (the store deletes the committed ones with the row); those held
        # in this very batch must not be inserted after that delete.
        pending = self._batch.delayed_added
        for key in [key for key, row in pending.items() if (row[1], row[2]) == (vhost, exchange.name)]:
            del pending[key]
        self._topology("exchange-", (vhost, exchange.name))

    def delayed_held(self, vhost: str, exchange: str, due_ms: int, message: Message) -> int:
        key = self._next_delayed_key
        self._next_delayed_key = key + 1
        row = (key, vhost, exchange, due_ms, message.exchange, message.routing_key)
        self._batch.delayed_added[key] = (*row, message.header_payload, message.body)
        self._dirty()
        return key

    def delayed_released(self, key: int) -> None:
        if self._batch.delayed_added.pop(key, None) is None:
            self._batch.delayed_removed.append(key)
        self._dirty()

    def queue_declared(self, queue: Queue) -> None:
        if self.replaying:
            return  # recovery sets the stored id itself
        queue.store_id = self._next_queue_id
        self._next_queue_id += 1
        row = (queue.store_id, queue.vhost, queue.name, int(queue.auto_delete), encode_table(queue.arguments))
        self._topology("queue+", row)

    def queue_consumed(self, queue: Queue) -> None:
        self._topology("queue~", (queue.store_id,))

    def queue_deleted(self, queue: Queue) -> None:
        self.drop_stored_queue(queue.store_id)

    def drop_stored_queue(self, queue_id: int) -> None:
        """The queue row, its bindings and its messages go (recovery uses it too, while replaying)."""
        self._batch.dropped_queues.append(queue_id)
        self._batch.topology.append(("queue-", (queue_id,)))
        self._dirty()

    def _binding_row(self, vhost: str, binding: Binding) -> tuple[str, str, str, str, str, str]:
        kind = "exchange" if binding.is_e2e else "queue"
        destination: str = getattr(binding.destination, "name", "")
        return (
            vhost,
            binding.source.name,
            kind,
            destination,
            binding.routing_key,
            _sorted_table(binding.args),
        )

    def binding_added(self, vhost: str, binding: Binding) -> None:
        self._topology("binding+", self._binding_row(vhost, binding))

    def binding_removed(self, vhost: str, binding: Binding) -> None:
        self._topology("binding-", self._binding_row(vhost, binding))

    # -- Persistence: messages (the hot path: plain tuples, no per-call objects beyond the row)

    def message_added(self, queue: Queue, envelope: Envelope) -> None:
        message = envelope.message
        key = (queue.store_id << KEY_SEQ_BITS) | envelope.seq
        self._batch.added[key] = (
            key,
            message.exchange,
            message.routing_key,
            message.header_payload,
            message.body,
            getattr(envelope, "expires_at", None),
            1 if envelope.redelivered else 0,
        )
        # rabbit_variable_queue counts a persistent message of a durable queue as one disk write when it
        # hands it to its queue index (or message store), whether or not an ack cancels it before the flush.
        queue.stats.disk_writes += 1
        self.writes += 1
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._call_soon(self._flush)

    def message_published(self, queue: Queue, seq: int, message: Message) -> None:
        key = (queue.store_id << KEY_SEQ_BITS) | seq
        self._batch.added[key] = (
            key,
            message.exchange,
            message.routing_key,
            message.header_payload,
            message.body,
            None,
            0,
        )
        queue.stats.disk_writes += 1  # as message_added
        self.writes += 1
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._call_soon(self._flush)

    def message_delivered(self, queue: Queue, envelope: Envelope) -> None:
        if not envelope.seq:
            return  # never stored as a row (a stream's delivery: its log is not marked)
        key = (queue.store_id << KEY_SEQ_BITS) | envelope.seq
        batch = self._batch
        row = batch.added.get(key)
        if row is not None:
            batch.added[key] = (*row[:6], 1)
        else:
            batch.delivered.append(key)
        if batch.counted:  # quorum returns in this batch (none in most)
            counted = batch.counted.get(key)
            if counted is not None:  # returned earlier in this batch: the count stays, the mark is set again
                batch.counted[key] = (counted[0], 1)
        self.writes += 1  # _dirty, inline: once per delivery of a stored message
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._call_soon(self._flush)

    def messages_returned(
        self, queue: Queue, envelopes: Iterable[Envelope], committed: Callable[[], None]
    ) -> None:
        base = queue.store_id << KEY_SEQ_BITS
        counted = self._batch.counted
        for envelope in envelopes:
            if envelope.message.delivery_mode == 2 and envelope.seq:
                counted[base | envelope.seq] = (getattr(envelope, "delivery_count", 0), 0)
        self._dirty()
        self.on_commit(self._batch.id, _Committed(committed))

    def messages_removed(self, queue: Queue, envelopes: Iterable[Envelope]) -> None:
        base = queue.store_id << KEY_SEQ_BITS
        batch = self._batch
        added, removed = batch.added, batch.removed
        changed = False
        for envelope in envelopes:
            if envelope.message.delivery_mode != 2 or not envelope.seq:
                continue  # transient, or never queued (refused by reject-publish-dlx)
            key = base | envelope.seq
            if added.pop(key, None) is None:
                removed.append(key)
            changed = True
        if changed:
            self.writes += 1  # _dirty, inline: once per ack of a stored message
            if not self._flush_scheduled:
                self._flush_scheduled = True
                self._call_soon(self._flush)

    def stream_appended(
        self, queue: Queue, segment_first: int, offset: int, appended_ms: int, message: Message
    ) -> None:
        self._batch.stream_appends.append(
            (
                queue.store_id,
                segment_first,
                offset,
                appended_ms,
                message.exchange,
                message.routing_key,
                message.header_payload,
                message.body,
            )
        )
        self.writes += 1
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._call_soon(self._flush)

    def stream_disk(self, queue: Queue) -> StreamDisk | None:
        return self.store.stream_disk(queue.store_id)

    def stream_rolled(self, queue: Queue, segment_first: int) -> None:
        self._batch.stream_rolls.append((queue.store_id, segment_first))
        self._dirty()

    def stream_segments_dropped(self, queue: Queue, segment_firsts: list[int]) -> None:
        self._batch.stream_dropped.extend((queue.store_id, first) for first in segment_firsts)
        self._dirty()
