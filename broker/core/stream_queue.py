"""A stream queue's path (`FeaturedPath` of a queue declared with ``x-queue-type: stream``): publishes
append to a `StreamLog`, each consumer reads from its own offset, acks only return credit, and every
delivery carries the ``x-stream-offset`` header (RabbitMQ's rabbit_stream_queue over AMQP 0-9-1, 3.10.8)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from broker.core.envelope import Envelope
from broker.core.message import Message
from broker.core.stream_filter import StreamFilter, consumer_filter
from broker.core.stream_log import Segment, StreamLog
from broker.core.stream_offset import start_offset
from protocol.errors import ChannelError, HardError, ReplyCode

if TYPE_CHECKING:
    from broker.core.queue import Consumer, Queue, QueueHost
    from broker.core.queue_settings import QueueSettings
    from broker.core.unacked import Delivery

# Sets the x-stream-offset header on a copy of a message (the vhost's header rewriter).
Stamp = Callable[["Message", int], "Message"]


def _resource(queue: Queue) -> str:
    return f"queue '{queue.name}' in vhost '{queue.vhost}'"


def not_supported(queue: Queue, operation: str) -> HardError:
    """rabbit_stream_queue's refusal of an operation streams lack: 540, the connection closes."""
    return HardError(
        ReplyCode.NOT_IMPLEMENTED, f"{operation} not supported by stream queues {_resource(queue)}"
    )


class StoredEntry(Envelope):
    """A log entry as the store keeps it: ``seq`` is offset + 1 (0 means "not stored" to the store), and the
    append time rides in the store's expiry column (``expires_at``), which streams do not otherwise use."""

    __slots__ = ("expires_at",)

    def __init__(self, seq: int, message: Message, appended_ms: int) -> None:
        super().__init__(seq, message)
        self.expires_at = appended_ms


# The store removes rows only of persistent messages (a classic queue never stores transient ones); a
# stream stores every message, so its removals name the rows through this persistent stand-in.
_STORED_ROW = Message("", "", b"", b"", None, 2)


def _entries(segments: list[Segment]) -> list[Envelope]:
    """The store rows of segments retention dropped."""
    return [
        StoredEntry(segment.first_offset + index + 1, _STORED_ROW, 0)
        for segment in segments
        for index in range(len(segment.messages))
    ]


class StreamPath:
    """The log, and where each consumer reads next."""

    __slots__ = ("cursors", "filters", "host", "log", "queue", "settings", "stamp")

    def __init__(self, queue: Queue, settings: QueueSettings, host: QueueHost, stamp: Stamp) -> None:
        self.queue = queue
        self.settings = settings
        self.host = host
        self.stamp = stamp
        self.log = StreamLog(settings.max_segment_size_bytes)
        self.cursors: dict[Consumer, int] = {}
        self.filters: dict[Consumer, StreamFilter] = {}

    @property
    def message_count(self) -> int:
        return self.log.message_count

    def check_consume(self, prefetch_count: int, no_ack: bool, arguments: Mapping[str, Any]) -> None:
        """rabbit_stream_queue:consume's refusals, in its order, and the offset spec's own crash."""
        queue = self.queue
        if prefetch_count == 0:
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED, f"consumer prefetch count is not set for '{_resource(queue)}'"
            )
        if no_ack:
            raise not_supported(queue, "automatic acknowledgement")
        start_offset(self.log, arguments.get("x-stream-offset"), self.host.clock.now_ms(), _resource(queue))

    # -- FeaturedPath

    def enqueue(self, message: Message) -> bool:
        now_ms = self.host.clock.now_ms()
        offset = self.log.append(message, now_ms)
        store = self.queue.store
        if store is not None:
            # Every message of a stream is kept, transient or not; the channel's confirm waits for the commit.
            store.message_added(self.queue, StoredEntry(offset + 1, message, now_ms))
        dropped = self.log.apply_retention(self.settings.max_length_bytes, self.settings.max_age_ms, now_ms)
        if dropped and store is not None:
            store.messages_removed(self.queue, _entries(dropped))
        for consumer, offset in self.cursors.items():
            if offset < self.log.first_offset:
                self.cursors[consumer] = self.log.first_offset
        if self.cursors:
            self.queue.dispatcher.wake(self.queue)
        return True

    def requeue(self, envelopes: Iterable[Envelope]) -> None:
        """A closed channel's outstanding deliveries: a stream keeps every message, nothing to put back."""

    def get(self) -> Envelope | None:
        raise not_supported(self.queue, "basic.get")

    def recover(self, envelopes: list[Envelope]) -> None:
        """The stored entries, in offset order: offsets and append times as they were."""
        if not envelopes:
            return
        self.log = StreamLog(self.settings.max_segment_size_bytes, first_offset=envelopes[0].seq - 1)
        now_ms = self.host.clock.now_ms()
        for envelope in envelopes:
            if envelope.seq - 1 != self.log.next_offset:  # a gap (lost transient rows): keep offsets
                self.log = StreamLog(self.settings.max_segment_size_bytes, first_offset=envelope.seq - 1)
            self.log.append(envelope.message, getattr(envelope, "expires_at", None) or now_ms)

    def purged(self) -> None:
        raise not_supported(self.queue, "queue.purge")

    def consumer_added(self, consumer: Consumer) -> None:
        spec = consumer.arguments.get("x-stream-offset")
        self.cursors[consumer] = start_offset(self.log, spec, self.host.clock.now_ms(), _resource(self.queue))
        wanted = consumer_filter(consumer.arguments)
        if wanted is not None:
            self.filters[consumer] = wanted
        self.queue.dispatcher.wake(self.queue)

    def consumer_removed(self) -> None:
        live = set(self.queue.consumers)
        for consumer in [c for c in self.cursors if c not in live]:
            del self.cursors[consumer]
            self.filters.pop(consumer, None)

    def dispatch(self, budget: int) -> bool:
        """Round-robin over consumers, each from its own cursor, while their prefetch allows; ``work``
        counts deliveries and filtered-out skips."""
        log, queue = self.log, self.queue
        work = 0
        progress = True
        while work < budget and progress:
            progress = False
            for consumer, offset in list(self.cursors.items()):
                if offset >= log.next_offset or not consumer.channel.can_deliver(consumer):
                    continue
                entry = log.read(offset)
                if entry is None:  # retention passed the cursor: resume at the head
                    self.cursors[consumer] = log.first_offset
                    progress = True
                    continue
                self.cursors[consumer] = offset + 1
                wanted = self.filters.get(consumer)
                if wanted is not None and not wanted.accepts(entry[0]):
                    work += 1  # skipped: no credit spent, but it counts against the turn's budget
                    progress = True
                    continue
                # seq 0: the store never marks or removes anything for a stream delivery or its ack.
                envelope = Envelope(0, self.stamp(entry[0], offset))
                consumer.channel.deliver(consumer, queue, envelope)
                work += 1
                progress = True
        return work >= budget

    def touch(self) -> None:
        """Streams have no x-expires."""

    def close(self) -> None:
        self.cursors.clear()
        self.filters.clear()


def refuse_stream_settle(deliveries: Iterable[Delivery]) -> None:
    """basic.reject and basic.nack, requeue or not, on a stream delivery: rabbit_stream_queue:settle refuses
    every outcome but ack (540, the connection closes)."""
    for delivery in deliveries:
        if isinstance(delivery.queue.features, StreamPath):
            raise not_supported(delivery.queue, "basic.nack and basic.reject")
