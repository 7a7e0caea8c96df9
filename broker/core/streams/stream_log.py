"""A stream's append-only log: messages at increasing offsets, grouped in segments that retention removes
whole (by total size and by age), as RabbitMQ's osiris log does. Only the open segment (and closed ones not
yet written) stays in memory; the rest is read from the segment files, so a long stream does not live in RAM.
Pure: time comes in as ``now_ms``, files through `StreamDisk`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from broker.core.model.message import Message
from broker.core.queues.stream_disk import StreamDisk
from broker.core.streams.stream_file_bytes import (
    LOG_HEADER_BYTES,
    SNAPSHOT_OFFSETS,
    EntrySizer,
    segment_start_bytes,
)

# RabbitMQ's default x-stream-max-segment-size-bytes (500 MB, streams.md).
DEFAULT_SEGMENT_SIZE_BYTES = 500_000_000


@dataclass(frozen=True, slots=True)
class ClosedSegmentMeta:
    """A closed segment at start-up, known from its index's seal (its entries stay in its file)."""

    count: int
    body_bytes: int
    last_ms: int
    size_bytes: int  # as osiris counts its file (`broker.core.streams.stream_file_bytes`)
    skipped: int  # offsets its tracking snapshot took before its first entry


@dataclass(slots=True)
class Segment:
    """Consecutive entries from ``first_offset + skipped``; ``timestamps_ms`` parallel to ``messages`` while
    the segment is ``resident``. A closed segment whose entries are all on disk is dropped from memory: it
    keeps only its counts, sizes and last append time, and is read back through `StreamDisk`.

    As osiris, every segment after a stream's first opens with a tracking snapshot chunk that takes one
    offset (``skipped``): no message is delivered at it. ``size_bytes`` is the segment file's size as osiris
    writes it (what retention and rolls count), ``body_bytes`` the message bodies (what memory holds)."""

    first_offset: int
    messages: list[Message] = field(default_factory=list)
    timestamps_ms: list[int] = field(default_factory=list)
    size_bytes: int = LOG_HEADER_BYTES
    count: int = 0
    last_ms: int = 0
    resident: bool = True
    skipped: int = 0
    body_bytes: int = 0
    # Out of memory: the journal's mark and message id of the entries the journal sampled at publish, by
    # offset, so a replay from the file is journaled against the published message as before.
    marks: dict[int, tuple[tuple[int, int], int]] = field(default_factory=dict)

    @property
    def entries_first(self) -> int:
        """The offset of the segment's first message (after its snapshot, if any)."""
        return self.first_offset + self.skipped

    @property
    def next_offset(self) -> int:
        return self.first_offset + self.skipped + self.count

    def evict(self) -> None:
        first = self.entries_first
        self.marks = {
            first + index: (message.journal, message.message_id)
            for index, message in enumerate(self.messages)
            if message.journal is not None
        }
        self.messages = []
        self.timestamps_ms = []
        self.resident = False


class StreamLog:
    """Offsets start at 0 and never change; ``first_offset`` moves up as retention drops segments."""

    __slots__ = ("disk", "max_segment_size_bytes", "rolled", "segments", "sizer")

    def __init__(self, max_segment_size_bytes: int | None = None, first_offset: int = 0) -> None:
        self.max_segment_size_bytes = max_segment_size_bytes or DEFAULT_SEGMENT_SIZE_BYTES
        self.segments: list[Segment] = [Segment(first_offset)]
        self.disk: StreamDisk | None = None  # set when the store keeps segment files the log can read
        self.sizer = EntrySizer()
        self.rolled = False  # whether the last append opened a new segment

    @property
    def first_offset(self) -> int:
        return self.segments[0].first_offset

    @property
    def next_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def last_message_offset(self) -> int:
        """The newest message's offset (the tail when the log has none)."""
        for segment in reversed(self.segments):
            if segment.count:
                return segment.next_offset - 1
        return self.next_offset

    @property
    def message_count(self) -> int:
        """The messages in the log (offsets taken by tracking snapshots hold none)."""
        return sum(segment.count for segment in self.segments)

    @property
    def size_bytes(self) -> int:
        """The segment files' bytes as osiris counts them (what x-max-length-bytes retention counts)."""
        return sum(segment.size_bytes for segment in self.segments)

    @property
    def body_bytes(self) -> int:
        return sum(segment.body_bytes for segment in self.segments)

    @property
    def resident_bytes(self) -> int:
        """The body bytes held in memory: the open segment and closed ones not yet written."""
        return sum(segment.body_bytes for segment in self.segments if segment.resident)

    def evict_written(self) -> None:
        """Drop from memory every closed segment whose entries are all in the files (never the tail)."""
        disk, segments = self.disk, self.segments
        if disk is None or len(segments) < 2 or not segments[-2].resident:
            return
        # Segments are written in order, so the resident closed ones are the run just before the tail.
        written = disk.written()
        at = len(segments) - 2
        while at > 0 and segments[at - 1].resident:
            at -= 1
        for segment in segments[at:-1]:
            if segment.next_offset > written:
                break
            segment.evict()

    def append(self, message: Message, now_ms: int) -> int:
        """Append at the tail; a full segment is closed first (osiris_log:write_chunk rolls when the file
        has reached the size before a chunk is written), and the new one starts with the tracking snapshot
        osiris_writer writes first (one offset). Returns the new message's offset."""
        self.rolled = self.roll_if_full()
        tail = self.segments[-1]
        offset = tail.next_offset
        tail.size_bytes += self.sizer.chunk_bytes(message, not tail.count and tail.skipped > 0)
        tail.messages.append(message)
        tail.timestamps_ms.append(now_ms)
        tail.body_bytes += len(message.body)
        tail.count += 1
        tail.last_ms = now_ms
        return offset

    def roll(self) -> None:
        """Close the tail: a new segment opens with a snapshot chunk (the next append goes after it)."""
        self.segments.append(_rolled(self.next_offset))

    def roll_if_full(self) -> bool:
        """Roll when the tail has reached the segment size (osiris checks before each chunk it writes, a
        tracking snapshot's included). Returns whether it rolled."""
        tail = self.segments[-1]
        if tail.count and tail.size_bytes >= self.max_segment_size_bytes:
            self.roll()
            return True
        return False

    def segment_of(self, offset: int) -> Segment:
        """The segment holding ``offset`` (between the head and the tail)."""
        return self.segments[bisect_right(self.segments, offset, key=lambda s: s.first_offset) - 1]

    def offset_at(self, timestamp_ms: int) -> int:
        """The first offset appended at or after ``timestamp_ms`` (the tail when none is): binary search over
        the segments by their last append, then within the segment, as osiris seeks by its timestamp index."""
        segments = self.segments
        index = bisect_left(segments, timestamp_ms, key=lambda s: s.last_ms if s.count else 0)
        if index >= len(segments) or not segments[index].count:
            return self.next_offset
        segment = segments[index]
        if segment.resident:
            return segment.entries_first + bisect_left(segment.timestamps_ms, timestamp_ms)
        assert self.disk is not None  # only a log with files evicts
        found = self.disk.offset_at(segment.first_offset, timestamp_ms)
        return segment.next_offset if found is None else found

    def restore_segment(
        self, first_offset: int, messages: list[Message], timestamps_ms: list[int], skipped: int = 0
    ) -> None:
        """Recovery: a stored segment whose first message is at ``first_offset + skipped``, in order after
        the ones restored before it (the empty initial segment is replaced by the first)."""
        segment = _rolled(first_offset) if skipped else Segment(first_offset)
        segment.skipped = skipped
        for index, message in enumerate(messages):
            segment.size_bytes += self.sizer.chunk_bytes(message, skipped > 0 and not index)
            segment.body_bytes += len(message.body)
        segment.messages, segment.timestamps_ms = messages, timestamps_ms
        segment.count = len(messages)
        segment.last_ms = timestamps_ms[-1] if timestamps_ms else 0
        self._restored(segment)

    def restore_closed(self, first_offset: int, meta: ClosedSegmentMeta) -> None:
        """Recovery: a closed segment left on disk (its entries are read back from its file when needed)."""
        segment = Segment(
            first_offset, [], [], meta.size_bytes, meta.count, meta.last_ms, False, meta.skipped
        )
        segment.body_bytes = meta.body_bytes
        self._restored(segment)

    def _restored(self, segment: Segment) -> None:
        if len(self.segments) == 1 and not self.segments[0].count:
            self.segments[0] = segment
        else:
            self.segments.append(segment)

    def apply_retention(self, max_bytes: int | None, max_age_ms: int | None, now_ms: int) -> list[Segment]:
        """Drop whole closed segments over ``max_bytes`` in total or older than ``max_age_ms`` (by their last
        append); the active (last) segment always stays. Returns the segments dropped. Dropping the oldest
        while the total is over keeps the same segments as osiris_log:eval_max_bytes, which keeps the newest
        older segments that fit in the limit less the active one."""
        dropped: list[Segment] = []
        if max_bytes is None and max_age_ms is None:
            return dropped
        while len(self.segments) > 1:
            head = self.segments[0]
            too_big = max_bytes is not None and self.size_bytes > max_bytes
            too_old = max_age_ms is not None and head.last_ms < now_ms - max_age_ms
            if not (too_big or too_old):
                break
            dropped.append(head)
            del self.segments[0]
        return dropped


def _rolled(first_offset: int) -> Segment:
    """A segment after the first: its file opens with a tracking snapshot chunk holding one offset."""
    return Segment(first_offset, size_bytes=segment_start_bytes(SNAPSHOT_OFFSETS), skipped=SNAPSHOT_OFFSETS)
