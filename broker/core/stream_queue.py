"""A stream queue's path (`FeaturedPath` of a queue declared with ``x-queue-type: stream``): publishes
append to a `StreamLog`, each consumer reads from its own offset, acks only return credit, and every
delivery carries the ``x-stream-offset`` header (RabbitMQ's rabbit_stream_queue over AMQP 0-9-1, 3.10.8)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from broker.core.envelope import Envelope
from broker.core.message import Message
from broker.core.stream_filter import StreamFilter, consumer_filter
from broker.core.stream_log import StreamLog
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
        log = self.log
        offset = log.append(message, now_ms)
        store = self.queue.store
        if store is not None:
            # Every message of a stream is kept, transient or not; the channel's confirm waits for the commit.
            store.stream_appended(self.queue, log.segments[-1].first_offset, offset, now_ms, message)
        self.apply_retention(now_ms)
        if self.cursors:
            self.queue.dispatcher.wake(self.queue)
        return True

    def apply_retention(self, now_ms: int) -> None:
        """Whole segments over x-max-length-bytes or older than x-max-age go (on append, and when a policy
        changes the limits); cursors behind the new head move to it."""
        settings = self.settings
        dropped = self.log.apply_retention(settings.max_length_bytes, settings.max_age_ms, now_ms)
        if not dropped:
            return
        store = self.queue.store
        if store is not None:
            store.stream_segments_dropped(self.queue, [segment.first_offset for segment in dropped])
        head = self.log.first_offset
        for consumer, offset in self.cursors.items():
            if offset < head:
                self.cursors[consumer] = head

    def requeue(self, envelopes: Iterable[Envelope]) -> None:
        """A closed channel's outstanding deliveries: a stream keeps every message, nothing to put back."""

    def get(self) -> Envelope | None:
        raise not_supported(self.queue, "basic.get")

    def recover(self, envelopes: list[Envelope]) -> None:
        """Streams come back through `recover_segments` (their log is not kept as message rows)."""

    def recover_segments(self, segments: Iterable[tuple[int, list[tuple[Message, int]]]]) -> None:
        """The stored segments in order, each as its first offset and (message, append time) pairs: offsets,
        times and segment boundaries as they were."""
        log = StreamLog(self.settings.max_segment_size_bytes)
        for first_offset, entries in segments:
            if log.segments[-1].messages and first_offset != log.next_offset:
                log = StreamLog(self.settings.max_segment_size_bytes)  # a gap: keep what follows it
            log.restore_segment(first_offset, [e[0] for e in entries], [e[1] for e in entries])
        self.log = log

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
