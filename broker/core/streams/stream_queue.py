"""A stream queue's path (`FeaturedPath` of a queue declared with ``x-queue-type: stream``): publishes
append to a `StreamLog`, each consumer reads from its own offset, acks only return credit, and every
delivery carries the ``x-stream-offset`` header (RabbitMQ's rabbit_stream_queue over AMQP 0-9-1, 3.10.8)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from broker.core.model.envelope import Envelope
from broker.core.model.message import Message
from broker.core.streams.stream_filter import StreamFilter, consumer_filter
from broker.core.streams.stream_log import DEFAULT_SEGMENT_SIZE_BYTES, ClosedSegmentMeta, StreamLog
from broker.core.streams.stream_offset import start_offset
from protocol.errors import ChannelError, HardError, ReplyCode

if TYPE_CHECKING:
    from broker.core.queues.queue import Consumer, Queue, QueueHost
    from broker.core.queues.queue_settings import QueueSettings

# Sets the x-stream-offset header on a copy of a message (the vhost's header rewriter).
Stamp = Callable[["Message", int], "Message"]


def _resource(queue: Queue) -> str:
    return f"queue '{queue.name}' in vhost '{queue.vhost}'"


def not_supported(queue: Queue, operation: str) -> HardError:
    """rabbit_stream_queue's refusal of an operation streams lack: 540, the connection closes."""
    return HardError(
        ReplyCode.NOT_IMPLEMENTED, f"{operation} not supported by stream queues {_resource(queue)}"
    )


# The offset the header template is written with, found back by its bytes (a long, as RabbitMQ types it).
_PLACEHOLDER = 0x5753_4F46_4653_4554
_PLACEHOLDER_ENTRY = b"\x0fx-stream-offsetl" + _PLACEHOLDER.to_bytes(8, "big")
_TEMPLATES = 1024  # distinct content headers remembered per stream
# What a consumer reads from a closed segment's file per turn (whole chunks, so a little more): sequential,
# batched reads as osiris readers do, bounding each consumer's read-ahead in memory.
READ_BATCH_BYTES = 256 * 1024


class _ReadAhead:
    """A consumer's batch read from a segment file: entries from ``first``, and where the file goes on."""

    __slots__ = ("first", "messages", "position", "segment_first")

    def __init__(self, segment_first: int, first: int, messages: list[Message], position: int) -> None:
        self.segment_first = segment_first
        self.first = first
        self.messages = messages
        self.position = position

    @property
    def end(self) -> int:
        return self.first + len(self.messages)


class StreamPath:
    """The log, and where each consumer reads next."""

    __slots__ = (
        "cursors",
        "disk_checked",
        "filters",
        "host",
        "log",
        "queue",
        "read_ahead",
        "settings",
        "stamp",
        "templates",
    )

    def __init__(self, queue: Queue, settings: QueueSettings, host: QueueHost, stamp: Stamp) -> None:
        self.queue = queue
        self.settings = settings
        self.host = host
        self.stamp = stamp
        self.log = StreamLog(settings.max_segment_size_bytes)
        self.cursors: dict[Consumer, int] = {}
        self.filters: dict[Consumer, StreamFilter] = {}
        self.templates: dict[bytes, tuple[bytes, bytes]] = {}
        self.read_ahead: dict[Consumer, _ReadAhead] = {}
        self.disk_checked = False

    def _attach_disk(self) -> None:
        """Once the queue has its store: the segment files closed segments are read back from, if any."""
        self.disk_checked = True
        store = self.queue.store
        if store is not None:
            self.log.disk = store.stream_disk(self.queue)

    @property
    def ram_bytes(self) -> int:
        """Body bytes this stream holds in memory: resident segments plus consumers' read-ahead batches."""
        ahead = sum(len(m.body) for batch in self.read_ahead.values() for m in batch.messages)
        return self.log.resident_bytes + ahead

    @property
    def message_count(self) -> int:
        return self.log.message_count

    def apply_settings(self, settings: QueueSettings) -> None:
        """A policy changed max-age, max-length-bytes or the segment size: retention runs now on the closed
        segments, and a new segment size applies from the next roll (osiris keeps written segments)."""
        self.settings = settings
        self.log.max_segment_size_bytes = settings.max_segment_size_bytes or DEFAULT_SEGMENT_SIZE_BYTES
        self.apply_retention(self.host.clock.now_ms())

    def check_consume(
        self,
        prefetch_count: int,
        no_ack: bool,
        arguments: Mapping[str, Any],
        names_stream_queue: bool = False,
    ) -> None:
        """rabbit_stream_queue:consume's refusals, in its order, and the offset spec's own crash; with
        ``names_stream_queue`` in RabbitMQ 4.0's words ("... for stream queue 'q' in vhost 'v'")."""
        queue = self.queue
        if names_stream_queue:
            named = f"stream queue '{queue.name}' in vhost '{queue.vhost}'"
            if prefetch_count == 0:
                raise ChannelError(
                    ReplyCode.PRECONDITION_FAILED, f"consumer prefetch count is not set for {named}"
                )
            if no_ack:
                raise HardError(
                    ReplyCode.NOT_IMPLEMENTED, f"automatic acknowledgement not supported by {named}"
                )
        if prefetch_count == 0:
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED, f"consumer prefetch count is not set for '{_resource(queue)}'"
            )
        if no_ack:
            raise not_supported(queue, "automatic acknowledgement")
        self.check_offset(arguments.get("x-stream-offset"))

    def check_offset(self, spec: Any) -> None:
        """The offset spec's refusal (406) or crash (541), before a consumer is added with it."""
        start_offset(self.log, spec, self.host.clock.now_ms(), _resource(self.queue))

    def available(self, consumer: Consumer) -> int:
        """How many offsets ``consumer`` has still to read (an AMQP 1.0 flow's ``available``)."""
        cursor = self.cursors.get(consumer)
        if cursor is None:
            return 0
        return max(0, self.log.next_offset - max(cursor, self.log.first_offset))

    # -- FeaturedPath

    def enqueue(self, message: Message) -> bool:
        now_ms = self.host.clock.now_ms()
        if not self.disk_checked:
            self._attach_disk()
        log = self.log
        offset = log.append(message, now_ms)
        store = self.queue.store
        if store is not None:
            # Every message of a stream is kept, transient or not; the channel's confirm waits for the commit.
            store.stream_appended(self.queue, log.segments[-1].first_offset, offset, now_ms, message)
        log.evict_written()
        if log.rolled:
            # osiris evaluates retention only when a segment rolls over (osiris_log:write_chunk), so a
            # stream past its age or size keeps its old segments until the next roll, as RabbitMQ does.
            self.apply_retention(now_ms)
        if self.cursors:
            self.queue.dispatcher.wake(self.queue)
        return True

    def _reader_waits(self) -> None:
        """A consumer has read to the tail. An osiris reader then registers an offset listener with the
        writer, and osiris_writer evaluates the tracking snapshot on every batch it handles, that one
        included: a full segment rolls at once (a new segment holding only the snapshot, one offset) and
        retention runs, before any further append (osiris_log:evaluate_tracking_snapshot, 1.3.1)."""
        log = self.log
        if log.roll_if_full():
            store = self.queue.store
            if store is not None:
                store.stream_rolled(self.queue, log.segments[-1].first_offset)
            self.apply_retention(self.host.clock.now_ms())

    def apply_retention(self, now_ms: int) -> None:
        """Whole segments over x-max-length-bytes or older than x-max-age go (when a segment rolls, and when a
        policy changes the limits, as osiris_log:update_retention); cursors behind the new head move to it."""
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

    def recover_segments(
        self, segments: Iterable[tuple[int, int, list[tuple[Message, int]] | ClosedSegmentMeta]]
    ) -> None:
        """The stored segments in order, each as its first offset, the offsets its tracking snapshot took,
        and (message, append time) pairs, or for a closed segment left in its file its seal: offsets
        (snapshot gaps included), times and segment boundaries as they were. Closed segments already written
        stay out of memory."""
        log = StreamLog(self.settings.max_segment_size_bytes)
        for first_offset, skipped, entries in segments:
            if log.segments[-1].count and first_offset != log.next_offset:
                log = StreamLog(self.settings.max_segment_size_bytes)  # a gap: keep what follows it
            if isinstance(entries, ClosedSegmentMeta):
                log.restore_closed(first_offset, entries)
            else:
                messages, times = [e[0] for e in entries], [e[1] for e in entries]
                log.restore_segment(first_offset, messages, times, skipped)
        if not log.segments[-1].resident:  # no open segment came back: appends go to a new one
            log.roll()
        self.log = log
        self._attach_disk()
        log.evict_written()

    def purged(self) -> None:
        raise not_supported(self.queue, "queue.purge")

    def consumer_added(self, consumer: Consumer) -> None:
        spec = consumer.arguments.get("x-stream-offset")
        self.cursors[consumer] = start_offset(
            self.log,
            spec,
            self.host.clock.now_ms(),
            _resource(self.queue),
            self.host.profile.stream_offset_past_tail_waits,
        )
        wanted = consumer_filter(consumer.arguments)
        if wanted is not None:
            self.filters[consumer] = wanted
        self.queue.dispatcher.wake(self.queue)

    def consumer_removed(self) -> None:
        live = set(self.queue.consumers)
        for consumer in [c for c in self.cursors if c not in live]:
            del self.cursors[consumer]
            self.filters.pop(consumer, None)
            self.read_ahead.pop(consumer, None)

    def dispatch(self, budget: int) -> bool:
        """Each consumer in turn reads a burst from its cursor, within one segment, while its prefetch allows;
        ``work`` counts deliveries and filtered-out skips (they take no credit but cost a turn's budget)."""
        log, queue = self.log, self.queue
        work = 0
        progress = True
        waiting = False
        while work < budget and progress:
            progress = False
            for consumer, cursor in list(self.cursors.items()):
                if cursor >= log.next_offset:
                    waiting = True
                    continue
                channel = consumer.channel
                if not channel.can_deliver(consumer):
                    continue
                offset = max(cursor, log.first_offset)  # retention passed the cursor: resume at the head
                segment = log.segment_of(offset)
                # A segment's first offset may be its tracking snapshot's: reading starts at its first
                # message, as an osiris reader skips non-user chunks.
                offset = max(offset, segment.entries_first)
                if offset >= segment.next_offset:  # an empty tail that only holds a snapshot
                    continue
                if segment.resident:
                    messages, first = segment.messages, segment.entries_first
                else:
                    messages, first = self._read_closed(consumer, segment.first_offset, offset)
                    if not messages:  # pragma: no cover - the file lost entries the log counts
                        self.cursors[consumer] = segment.next_offset
                        continue
                wanted = self.filters.get(consumer)
                position = offset - first
                end = min(len(messages), position + budget - work)
                while position < end:
                    message = messages[position]
                    position += 1
                    work += 1
                    if wanted is not None and not wanted.accepts(message):
                        continue
                    # seq 0: the store never marks or removes anything for a stream delivery or its ack.
                    channel.deliver(consumer, queue, Envelope(0, self.stamped(message, first + position - 1)))
                    if not channel.can_deliver(consumer):
                        break
                self.cursors[consumer] = first + position
                progress = True
        if waiting:
            self._reader_waits()
        self.log.evict_written()
        return work >= budget

    def _read_closed(self, consumer: Consumer, segment_first: int, offset: int) -> tuple[list[Message], int]:
        """The consumer's batch from a closed segment's file holding ``offset``: the one it has when it
        covers it, else the next batch, read on from where the last one ended (sequential), or through the
        segment's index when the consumer jumps (attach, retention)."""
        batch = self.read_ahead.get(consumer)
        if batch is not None and batch.segment_first == segment_first and batch.first <= offset < batch.end:
            return batch.messages, batch.first
        position = -1
        if batch is not None and batch.segment_first == segment_first and batch.end == offset:
            position = batch.position
        disk = self.log.disk
        assert disk is not None  # only a log with files has closed segments out of memory
        messages, after = disk.read(segment_first, offset, position, READ_BATCH_BYTES)
        marks = self.log.segment_of(offset).marks
        if marks:
            for index, message in enumerate(messages):
                mark = marks.get(offset + index)
                if mark is not None:
                    message.journal, message.message_id = mark
        self.read_ahead[consumer] = _ReadAhead(segment_first, offset, messages, after)
        return messages, offset

    def stamped(self, message: Message, offset: int) -> Message:
        """``message`` with the x-stream-offset header, as the vhost's rewriter would write it. The rewrite is
        done once per distinct content header with a placeholder offset; each delivery then only splices its
        offset's 8 bytes in (messages of a stream mostly share their properties)."""
        template = self.templates.get(message.header_payload)
        if template is None:
            probe = self.stamp(message, _PLACEHOLDER)
            if probe is message:  # no rewriter (embedded without a session layer): deliver as is
                return message
            raw = probe.header_payload
            at = raw.find(_PLACEHOLDER_ENTRY)
            if at < 0:  # pragma: no cover - the rewriter always writes the entry as a long
                return self.stamp(message, offset)
            cut = at + len(_PLACEHOLDER_ENTRY) - 8
            template = raw[:cut], raw[cut + 8 :]
            if len(self.templates) >= _TEMPLATES:
                self.templates.clear()
            self.templates[message.header_payload] = template
        headers = dict(message.headers) if message.headers else {}
        headers["x-stream-offset"] = offset
        # The same message to the journal and the event bus: every replay's delivery is journaled against it.
        return message.with_content_header(
            template[0] + offset.to_bytes(8, "big", signed=True) + template[1], headers
        )

    def touch(self) -> None:
        """Streams have no x-expires."""

    def close(self) -> None:
        self.cursors.clear()
        self.filters.clear()
        self.read_ahead.clear()
