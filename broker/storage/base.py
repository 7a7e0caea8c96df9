"""The `Store` protocol (where durable state lives), the batch of writes one commit applies, and the rows a
store hands back at recovery.

A message's key is ``queue_id << KEY_SEQ_BITS | seq``: one integer that orders a queue's messages by their
publish position and makes every delete a primary-key lookup. Rows are plain tuples so a batch crosses to the
writer thread without copying.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from broker.core.queues.stream_disk import StreamDisk
from broker.core.topology.persistence import CommitWaiter

if TYPE_CHECKING:  # the stream files load with the first stream, not at start-up
    from broker.storage.stream_files import StoredSegment, StreamRow

KEY_SEQ_BITS: Final = 40  # 10^12 messages per queue before a key would spill into the queue id

# ("vhost+", (name,)) ("vhost-", (name,)) ("vhost~", (name, metadata JSON))
# ("user+", (name, password, hash, algorithm, tags JSON)) ("user-", (name,)): its permissions go with it
# ("permission+", (user, vhost, configure, write, read)) ("permission-", (user, vhost))
# ("topic_permission+", (user, vhost, exchange, write, read)) ("topic_permission-", (user, vhost, exchange))
# ("exchange+", (vhost, name, type, auto_delete, internal, arguments)) ("exchange-", (vhost, name))
# ("queue+", (id, vhost, name, auto_delete, arguments)) ("queue-", (id,)) ("queue~", (id,)): had a consumer
# ("binding+" / "binding-", (vhost, source, destination_type, destination, routing_key, arguments))
# ("parameter+", (vhost, component, name, value JSON)) ("parameter-", (vhost, component, name)): policies,
# operator policies, vhost limits; user limits and global parameters with vhost "" (rabbit_runtime_parameters)
# ``arguments`` are typed JSON (broker.core.model.typed_json), so AMQP field types survive a restart.
TopologyOp = tuple[str, tuple[Any, ...]]
# (key, exchange, routing_key, content-header payload, body, expires_at epoch ms or None, delivered 0/1)
MessageRow = tuple[int, str, str, bytes, bytes, int | None, int]
# A message held by a durable x-delayed-message exchange: (key, vhost, holding exchange, due epoch ms,
# exchange published to, routing_key, content-header payload, body)
DelayedRow = tuple[int, str, str, int, str, str, bytes, bytes]


def message_key(queue_id: int, seq: int) -> int:
    return (queue_id << KEY_SEQ_BITS) | seq


def queue_key_range(queue_id: int) -> tuple[int, int]:
    """[low, high) of the message keys of one queue."""
    return queue_id << KEY_SEQ_BITS, (queue_id + 1) << KEY_SEQ_BITS


def key_runs(keys: list[int]) -> list[tuple[int, int]]:
    """``keys`` as the (first, last) runs of consecutive keys they make, in key order: every key from first
    to last is one of ``keys``, so deleting the runs deletes exactly them."""
    ordered = iter(sorted(keys))
    first = last = next(ordered)
    runs = []
    for key in ordered:
        if key != last + 1:
            runs.append((first, last))
            first = key
        last = key
    runs.append((first, last))
    return runs


class Batch:
    """Everything one loop turn (or more, while the writer is busy) changed; applied as one transaction.

    Apply order: topology in call order, then message inserts, delivered marks, deletes, and last the
    messages of queues deleted in this batch (so an insert for a queue deleted later in the batch cannot
    survive it).

    A plain class, as the rows below are named tuples: a dataclass's methods are compiled at every start
    (start-up time). Compared by identity."""

    __slots__ = (
        "added", "committed", "counted", "delayed_added", "delayed_removed", "delivered", "dropped_queues",
        "id", "removed", "stream_appends", "stream_dropped", "stream_rolls", "topology", "waiters",
    )  # fmt: skip

    def __init__(
        self,
        id: int,
        topology: list[TopologyOp] | None = None,
        added: dict[int, MessageRow] | None = None,
        delivered: list[int] | None = None,
        removed: list[int] | None = None,
        dropped_queues: list[int] | None = None,
        stream_appends: list[StreamRow] | None = None,
        stream_rolls: list[tuple[int, int]] | None = None,
        stream_dropped: list[tuple[int, int]] | None = None,
        counted: dict[int, tuple[int, int]] | None = None,
        delayed_added: dict[int, DelayedRow] | None = None,
        delayed_removed: list[int] | None = None,
        waiters: dict[CommitWaiter, None] | None = None,
        committed: bool = False,
    ) -> None:
        self.id = id
        self.topology: list[TopologyOp] = [] if topology is None else topology
        self.added: dict[int, MessageRow] = {} if added is None else added
        self.delivered: list[int] = [] if delivered is None else delivered
        self.removed: list[int] = [] if removed is None else removed
        self.dropped_queues: list[int] = [] if dropped_queues is None else dropped_queues
        # Stream logs (broker.storage.stream_files): appended entries in order, segments opened with no
        # entry yet (a roll while a reader waits at the tail), and retention's dropped segments, each as
        # (queue id, segment first offset). Applied after the messages, in that order, before the dropped
        # queues.
        self.stream_appends: list[StreamRow] = [] if stream_appends is None else stream_appends
        self.stream_rolls: list[tuple[int, int]] = [] if stream_rolls is None else stream_rolls
        self.stream_dropped: list[tuple[int, int]] = [] if stream_dropped is None else stream_dropped
        # Quorum returns: message key -> (its delivery count (x-delivery-count), delivered mark): a return
        # clears the mark (the message is back in the queue), a delivery after it in the same batch sets it
        # again. Applied after the inserts and delivered marks, so it wins over a mark made earlier.
        self.counted: dict[int, tuple[int, int]] = {} if counted is None else counted
        # Delayed messages (DelayedRow by key) and the keys of those that came due or went with their
        # exchange. Applied after the topology, so that an exchange deleted and declared again in one batch
        # keeps only the messages held after the declare (the writer drops the earlier ones from
        # ``delayed_added``).
        self.delayed_added: dict[int, DelayedRow] = {} if delayed_added is None else delayed_added
        self.delayed_removed: list[int] = [] if delayed_removed is None else delayed_removed
        self.waiters: dict[CommitWaiter, None] = {} if waiters is None else waiters
        self.committed = committed  # set by whoever applied it, so shutdown never applies it twice

    def messages_only(self) -> bool:
        """Changes to stored messages alone: no topology, dropped queue, delayed message or stream file."""
        return not (
            self.topology
            or self.dropped_queues
            or self.delayed_added
            or self.delayed_removed
            or self.stream_appends
            or self.stream_rolls
            or self.stream_dropped
        )

    def empty(self) -> bool:
        return self.messages_only() and not (self.added or self.delivered or self.removed or self.counted)


def unacked_adds(batches: list[Batch]) -> list[Batch]:
    """``batches``, committed as one, without the message rows a later one of them acks (as one batch never
    holds a message published and acked within it). The ack stays: it deletes an earlier record of the key
    if there is one, and is nothing if not."""
    acked_later: set[int] = set()
    kept: list[Batch] = []
    for batch in reversed(batches):
        if acked_later and batch.added and not acked_later.isdisjoint(batch.added):
            added = {key: row for key, row in batch.added.items() if key not in acked_later}
            kept.append(
                Batch(
                    batch.id,
                    added=added,
                    delivered=batch.delivered,
                    removed=batch.removed,
                    dropped_queues=batch.dropped_queues,
                    counted=batch.counted,
                )
            )
        else:
            kept.append(batch)
        acked_later.update(batch.removed)
    kept.reverse()
    return kept


# The rows `load` hands back are named tuples, as the message rows are plain ones: immutable, compared and
# hashed by value, built from a database row by position. As frozen dataclasses the seven classes cost each
# start with a data directory 22 M instructions (3.4%) to generate and compile their methods.


class ExchangeRow(NamedTuple):
    vhost: str
    name: str
    type: str
    auto_delete: bool
    internal: bool
    arguments: str | None


class QueueRow(NamedTuple):
    id: int
    vhost: str
    name: str
    auto_delete: bool
    arguments: str | None
    # An auto-delete queue that has had a consumer: RabbitMQ deletes it at recovery (its consumers are gone).
    had_consumer: int = 0


class BindingRow(NamedTuple):
    vhost: str
    source: str
    destination_type: str  # "queue" or "exchange"
    destination: str
    routing_key: str
    arguments: str | None


class UserRow(NamedTuple):
    name: str
    password: str | None
    password_hash: str | None
    algorithm: str | None
    tags: str | None = None  # a JSON list


class PermissionRow(NamedTuple):
    user: str
    vhost: str
    configure: str
    write: str
    read: str


class TopicPermissionRow(NamedTuple):
    user: str
    vhost: str
    exchange: str
    write: str
    read: str


class ParameterRow(NamedTuple):
    vhost: str
    component: str
    name: str
    value: str  # JSON


class Definitions:
    """The durable topology a store holds, in the order recovery applies it."""

    __slots__ = (
        "bindings", "exchanges", "parameters", "permissions", "queues", "topic_permissions", "users",
        "vhost_metadata", "vhosts",
    )  # fmt: skip

    def __init__(
        self,
        vhosts: list[str] | None = None,
        users: list[UserRow] | None = None,
        exchanges: list[ExchangeRow] | None = None,
        queues: list[QueueRow] | None = None,
        bindings: list[BindingRow] | None = None,
        parameters: list[ParameterRow] | None = None,
        permissions: list[PermissionRow] | None = None,
        topic_permissions: list[TopicPermissionRow] | None = None,
        vhost_metadata: dict[str, str] | None = None,  # name -> metadata JSON
    ) -> None:
        self.vhosts: list[str] = [] if vhosts is None else vhosts
        self.users: list[UserRow] = [] if users is None else users
        self.exchanges: list[ExchangeRow] = [] if exchanges is None else exchanges
        self.queues: list[QueueRow] = [] if queues is None else queues
        self.bindings: list[BindingRow] = [] if bindings is None else bindings
        self.parameters: list[ParameterRow] = [] if parameters is None else parameters
        self.permissions: list[PermissionRow] = [] if permissions is None else permissions
        self.topic_permissions: list[TopicPermissionRow] = (
            [] if topic_permissions is None else topic_permissions
        )
        self.vhost_metadata: dict[str, str] = {} if vhost_metadata is None else vhost_metadata


class StorageError(Exception):
    """The store cannot be used (foreign or corrupt file, newer schema, locked data directory); the message
    names the file."""


class StoreFenced(StorageError):
    """A newer active node holds the store: this node's epoch is stale (the ``warrenmq_leader`` row of a
    shared PostgreSQL store carries a different epoch than the one this node was granted). Raised by
    ``apply`` after rolling the batch back; the node must stop writing and step down."""


class StoreUnreachable(StorageError):
    """The store's server could not be reached: connection refused or lost, a statement that timed out, a
    server shutting down or starting up. Raised by ``apply`` with the batch rolled back or committed whole
    (never half): the writer keeps the batch, withholds its confirms and applies it again once the server
    answers, so every statement of a batch must be idempotent (rows by key, upserts, deletes by key)."""


class Store(Protocol):
    """A durable store. ``apply`` runs on one writer thread (or inline for the memory store); ``load`` and
    ``messages`` run before the broker accepts connections."""

    threaded: bool  # apply() runs on a writer thread (SQLite) or inline on the loop (memory)

    def load(self) -> Definitions: ...

    def messages(self, queue_id: int) -> Iterator[MessageRow]:
        """The stored messages of one queue in publish order."""
        ...

    def max_queue_id(self) -> int: ...

    def begin(self) -> bool:
        """Called once at start-up, before recovery: whether the previous run closed the store cleanly, and
        record (durably) that this run has not yet: a crash from now on is seen by the next start."""
        ...

    def delivery_counts(self, queue_id: int) -> dict[int, int]:
        """A quorum queue's stored delivery counts (message key -> count), for the messages that have one."""
        ...

    def delayed_messages(self) -> Iterator[DelayedRow]:
        """The messages held by durable delayed-message exchanges, in due order."""
        ...

    def max_delayed_key(self) -> int: ...

    def stream_segments(self, queue_id: int) -> Iterator[StoredSegment]:
        """A stream queue's log: each segment's first offset, the offsets its tracking snapshot took, and its
        entries in offset order, or for a closed segment left in its file, its seal."""
        ...

    def stream_disk(self, queue_id: int) -> StreamDisk | None:
        """A stream queue's segment files as its log reads them, or None when the store keeps no files
        (the log then keeps every segment in memory)."""
        ...

    def apply(self, batch: Batch) -> None:
        """Apply and commit ``batch`` (fsync per the store's policy); raise on failure."""
        ...

    def close(self, clean: bool = True) -> None:
        """Release the store; ``clean``: everything was committed, so the next start may trust the delivered
        marks (after a crash RabbitMQ's queue index marks every recovered message delivered)."""
        ...
