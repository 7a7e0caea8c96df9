"""A queue: ready messages in publish order, a round-robin ring of consumers, and dispatch to them in
batches. What a queue calls out to is a Protocol declared here, in the queue's terms, so this module names
nothing above it: the channel (`ConsumerChannel`), the vhost (`QueueHost`), the store (`QueueStore`, part of
`Persistence`), the event bus (`QueueEvents`) and the featured slow path (`FeaturedPath`, `QueueFeatures`).
Consumers joining and leaving, purge and delete (not per message) are in `broker.core.queues.queue_admin`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

# Envelope is re-exported: callers take it with the Queue it belongs to.
from broker.core.model.envelope import Envelope as Envelope  # noqa: PLC0414
from broker.core.model.envelope import put_back, wrap_fresh
from broker.core.model.event_types import Fate, Observer, Topology
from broker.core.model.message import Message
from broker.core.model.stats import QueueStats
from broker.core.queues.queue_bytes import added, removed

if TYPE_CHECKING:
    from broker.core.model.clock import Clock
    from broker.core.model.dispatcher import Dispatcher
    from broker.core.model.profile import Profile
    from broker.core.queues.queue_settings import QueueSettings
    from broker.core.queues.stream_disk import StreamDisk


class ConsumerChannel(Protocol):
    """What a queue needs from the channel that owns a consumer. Implemented by the session layer."""

    def can_deliver(self, consumer: Consumer) -> bool:
        """Called before each delivery: prefetch limits and socket backpressure say yes or no."""

    def deliver(self, consumer: Consumer, queue: Queue, envelope: Envelope) -> None:
        """Called when the queue hands a message to the consumer; the channel assigns the delivery tag."""

    def consumer_cancelled(self, consumer: Consumer) -> None:
        """Called when the broker cancels the consumer (its queue was deleted)."""


class Consumer:
    """One basic.consume. ``unacked`` counts deliveries awaiting ack, for its per-consumer prefetch."""

    __slots__ = (
        "arguments",
        "channel",
        "consumer_tag",
        "exclusive",
        "no_ack",
        "prefetch_count",
        "queue",
        "unacked",
    )

    def __init__(
        self,
        consumer_tag: str,
        queue: Queue,
        channel: ConsumerChannel,
        no_ack: bool,
        exclusive: bool,
        prefetch_count: int,
        arguments: Mapping[str, Any] | None = None,
    ) -> None:
        self.consumer_tag = consumer_tag
        self.queue = queue
        self.channel = channel
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.prefetch_count = prefetch_count
        self.arguments = dict(arguments or {})
        self.unacked = 0

    def __repr__(self) -> str:
        return f"Consumer({self.consumer_tag!r} on {self.queue.name!r})"


class QueueStore(Protocol):
    """The durable store's calls for a durable queue and its persistent messages (part of `Persistence`)."""

    def queue_consumed(self, queue: Queue) -> None:
        """A durable auto-delete queue got its first consumer: after a crash it is deleted, not recovered."""

    def queue_deleted(self, queue: Queue) -> None:
        """The queue and every message stored for it go."""

    def message_added(self, queue: Queue, envelope: Envelope) -> None: ...

    def message_published(self, queue: Queue, seq: int, message: Message) -> None:
        """A fresh publish enqueued at ``seq`` on the plain path (no expiry, never delivered): what
        ``message_added`` stores for its envelope, without one."""

    def message_delivered(self, queue: Queue, envelope: Envelope) -> None:
        """Delivered and not yet acked: after a crash it comes back with redelivered=true."""

    def messages_removed(self, queue: Queue, envelopes: Iterable[Envelope]) -> None:
        """Acked, rejected, dead-lettered out, expired, dropped, purged or delivered with no_ack."""

    def messages_returned(
        self, queue: Queue, envelopes: Iterable[Envelope], committed: Callable[[], None]
    ) -> None:
        """Quorum returns: each message's ``delivery_count`` is stored and its delivered mark cleared;
        ``committed`` runs on the loop once that is durable (rabbit_fifo commits a return to its log before
        the message can go out again, so a redelivery never runs ahead of the count that limits it)."""

    def stream_appended(
        self, queue: Queue, segment_first: int, offset: int, appended_ms: int, message: Message
    ) -> None:
        """A stream queue appended ``message`` at ``offset`` in the segment starting at ``segment_first``
        (every message of a stream is stored, transient or not; confirms wait for the commit)."""

    def stream_rolled(self, queue: Queue, segment_first: int) -> None:
        """A stream queue opened the segment starting at ``segment_first`` before any entry went into it
        (its file holds only RabbitMQ's tracking snapshot, which takes that offset)."""

    def stream_segments_dropped(self, queue: Queue, segment_firsts: list[int]) -> None:
        """Retention removed these whole segments of a stream queue."""

    def stream_disk(self, queue: Queue) -> StreamDisk | None:
        """Where a stream queue's closed segments are read back from (None: they stay in memory)."""


class DeliveryJournal(Protocol):
    """The journal's fast lane as a delivery meets it (see `JournalHook`)."""

    def delivered(self, queue: Queue, envelope: Envelope, delivery_tag: int, no_ack: bool) -> None:
        """A marked message's copy went to a consumer or basic.get (``no_ack``: settled at once)."""


class QueueEvents(Protocol):
    """The event bus as a queue and the deliveries from it use it (see `EventBus`)."""

    @property
    def observers(self) -> Sequence[Observer]: ...

    @property
    def hot_observers(self) -> Sequence[Observer]: ...

    @property
    def stepping(self) -> bool: ...

    @property
    def journal(self) -> DeliveryJournal | None: ...

    @property
    def tracer(self) -> Any: ...  # the firehose (broker.session.tracing); None while no vhost traces

    def hot_message(
        self, fate: Fate, vhost: str, message: Message, queue: str | None = None, **detail: Any
    ) -> None: ...

    def topology(self, kind: Topology, vhost: str, **detail: Any) -> None: ...


class FeaturedPath(Protocol):
    """A featured queue's slow path (`QueueFeatures`): each method takes over the matching Queue method."""

    @property
    def settings(self) -> QueueSettings: ...

    @property
    def message_count(self) -> int: ...

    def apply_settings(self, settings: QueueSettings) -> None:
        """A policy changed the queue's effective settings: apply them to what it holds now."""

    def enqueue(self, message: Message) -> bool: ...

    def requeue(self, envelopes: Iterable[Envelope]) -> None: ...

    def get(self) -> Envelope | None: ...

    def recover(self, envelopes: list[Envelope]) -> None: ...

    def purged(self) -> None: ...

    def consumer_added(self, consumer: Consumer) -> None: ...

    def consumer_removed(self) -> None: ...

    def dispatch(self, budget: int) -> bool: ...

    def touch(self) -> None: ...

    def close(self) -> None: ...


class QueueHost(Protocol):
    """What a queue needs from its vhost."""

    clock: Clock

    @property
    def profile(self) -> Profile:
        """The release emulated, where a queue's behaviour differs by release."""

    def dead_letter(self, queue: Queue, envelopes: list[Envelope], reason: str) -> None:
        """Called with messages leaving ``queue`` for ``reason``: dead-letter them, or drop them."""

    def expire_queue(self, queue: Queue) -> None:
        """Called when an x-expires queue has been unused for its whole period: delete it."""

    def with_delivery_count(self, message: Message, count: int) -> Message:
        """A copy of ``message`` carrying the quorum ``x-delivery-count`` header."""

    def plain_features(self, queue: Queue) -> FeaturedPath:
        """The slow path for a plain queue that needs it now (a per-message TTL or consumer priority)."""


class Queue:
    """One queue of a vhost. ``exclusive_owner`` is the owning connection (opaque here), or None."""

    __slots__ = (
        "arguments",
        "auto_delete",
        "consumers",
        "deleted",
        "dispatcher",
        "durable",
        "events",
        "exclusive_owner",
        "features",
        "fresh",
        "had_consumer",
        "host",
        "last_seq",
        "name",
        "on_unused",
        "operator_policy",
        "paged",
        "paged_bytes",
        "persistent_ready",
        "persistent_ready_bytes",
        "persistent_unacked",
        "persistent_unacked_bytes",
        "policy",
        "ready",
        "ready_bytes",
        "stats",
        "store",
        "store_id",
        "unacked",
        "unacked_bytes",
        "vhost",
    )

    def __init__(
        self,
        name: str,
        vhost: str,
        dispatcher: Dispatcher,
        durable: bool = False,
        exclusive_owner: object | None = None,
        auto_delete: bool = False,
        arguments: Mapping[str, Any] | None = None,
        on_unused: Callable[[Queue], None] | None = None,
    ) -> None:
        self.name = name
        self.vhost = vhost
        self.dispatcher = dispatcher
        self.durable = durable
        self.exclusive_owner = exclusive_owner
        self.auto_delete = auto_delete
        self.arguments: dict[str, Any] = dict(arguments or {})
        self.on_unused = on_unused
        # The ready list is ``ready`` then ``fresh``. ``fresh``: copies never delivered, as bare messages
        # (seqs: the last len(fresh) of ``last_seq``), so a backlog holds no object per copy for the cyclic
        # collector to walk (docs/benchmarks.md). ``ready``: envelopes of requeued and recovered copies (older
        # seqs: they left from the head) and every copy of a featured queue.
        self.ready: deque[Envelope] = deque()
        self.fresh: deque[Message] = deque()
        self.consumers: deque[Consumer] = deque()
        self.unacked = 0
        # Byte and persistence counters (broker.core.queues.queue_bytes); paged: bodies on disk
        # (queue_paging).
        self.ready_bytes = self.unacked_bytes = self.paged = self.paged_bytes = 0
        self.persistent_ready = self.persistent_ready_bytes = 0
        self.persistent_unacked = self.persistent_unacked_bytes = 0
        self.deleted = False
        self.had_consumer = False
        self.stats = QueueStats()  # message_stats, bumped by the session and the vhost
        self.last_seq = 0
        self.events: QueueEvents | None = None  # the vhost's bus, set when the vhost creates the queue
        # TTL, limits, priorities, …: None for a plain queue, which then never leaves the code below.
        self.features: FeaturedPath | None = None
        self.host: QueueHost | None = None  # the vhost, set when it creates the queue
        # The durable store, for a durable non-exclusive queue of a broker that has one; else None.
        self.store: QueueStore | None = None
        self.store_id = 0  # this queue's key in the store, given by Persistence.queue_declared
        # The policy and operator policy applying (broker.core.policies.policies.Policy), set by policy_apply.
        self.policy: Any = None
        self.operator_policy: Any = None

    def __repr__(self) -> str:
        return f"Queue({self.name!r}, ready={self.message_count}, consumers={len(self.consumers)})"

    @property
    def exclusive(self) -> bool:
        return self.exclusive_owner is not None

    @property
    def message_count(self) -> int:
        # A stream keeps its messages in its log, not in ``ready``: its path counts them.
        return len(self.ready) + len(self.fresh) if self.features is None else self.features.message_count

    def ready_envelopes(self) -> deque[Envelope]:
        """The whole ready list as envelopes, the fresh copies wrapped first: for the slow paths that walk,
        reorder or take over the list (purge, delete, paging, features, management). Returns ``ready``."""
        if self.fresh:
            wrap_fresh(self.ready, self.fresh, self.last_seq)
        return self.ready

    @property
    def consumer_count(self) -> int:
        # RabbitMQ counts every consumer, active or not, in declare-ok (spec deviation, reference §2 row 5).
        return len(self.consumers)

    def enqueue(self, message: Message) -> bool:
        """False when the queue refused the message (x-overflow reject-publish)."""
        if self.features is not None or message.ttl is not None:
            features = self.features or self.use_features()
            if features is not None:
                return features.enqueue(message)
        self.last_seq += 1
        self.fresh.append(message)
        self.ready_bytes += len(message.body)
        if message.delivery_mode == 2 and self.durable:
            self.persistent_ready += 1
            self.persistent_ready_bytes += len(message.body)
            if self.store is not None:
                # Keyed by its seq (``last_seq``), it stays a bare message in ``fresh`` as a transient one
                # does: no envelope per stored publish, and none for the fresh copies before it.
                self.store.message_published(self, self.last_seq, message)
        if self.consumers:
            self.dispatcher.wake(self)
        return True

    def use_features(self) -> FeaturedPath | None:
        """Switch a plain queue to the featured path (a per-message TTL or consumer priority arrived)."""
        if self.features is None and self.host is not None:
            self.features = self.host.plain_features(self)
        return self.features

    def requeue(self, envelopes: Iterable[Envelope]) -> None:
        """Put messages back at their original positions, marked redelivered (RabbitMQ since 2.7.0)."""
        if self.deleted:
            return
        if self.features is not None:
            self.features.requeue(envelopes)
            return
        # Into ``ready``, never ``fresh``: a requeued seq is older than every fresh one.
        for envelope in put_back(self.ready, envelopes):
            added(self, envelope)
        self.wake()

    def wake(self) -> None:
        """Ask for a dispatch pass: called when messages arrive or a consumer may take more."""
        if self.consumers and not self.deleted and (self.ready or self.fresh or self.message_count):
            self.dispatcher.wake(self)

    def dispatch(self, budget: int) -> bool:
        """Deliver up to ``budget`` messages round-robin; True when more could be delivered right away."""
        if self.features is not None:
            return self.features.dispatch(budget)
        ready, fresh = self.ready, self.fresh
        consumers = self.consumers
        delivered = 0
        durable = self.durable  # persistent counts (queue_bytes) only for a durable queue
        if len(consumers) == 1:
            # One consumer (the common case): no ring to rotate, bound methods hoisted out of the loop.
            consumer = consumers[0]
            can_deliver, deliver = consumer.channel.can_deliver, consumer.channel.deliver
            # Requeued copies (``ready``) first, then the fresh ones, each given its envelope as it leaves,
            # its seq counted on from the one before the head (a delivery may append to ``fresh``, never
            # take from it; a copy requeued meanwhile goes first and leaves the fresh seqs as they were).
            seq = self.last_seq - len(fresh)
            while (ready or fresh) and delivered < budget:
                if not can_deliver(consumer):
                    return False
                if ready:
                    envelope = ready.popleft()
                else:
                    seq += 1
                    envelope = Envelope(seq, fresh.popleft())
                if durable:
                    removed(self, envelope)
                else:
                    self.ready_bytes -= len(envelope.message.body)
                deliver(consumer, self, envelope)
                delivered += 1
            return bool(ready or fresh) and delivered >= budget
        while (ready or fresh) and delivered < budget:
            for _ in range(len(consumers)):
                consumer = consumers[0]
                consumers.rotate(-1)
                if consumer.channel.can_deliver(consumer):
                    break
            else:
                return False
            envelope = ready.popleft() if ready else Envelope(self.last_seq - len(fresh) + 1, fresh.popleft())
            if durable:
                removed(self, envelope)
            else:
                self.ready_bytes -= len(envelope.message.body)
            consumer.channel.deliver(consumer, self, envelope)
            delivered += 1
        return bool(ready or fresh) and delivered >= budget
