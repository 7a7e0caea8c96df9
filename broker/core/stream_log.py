"""A stream's append-only log: messages at increasing offsets, grouped in segments that retention removes
whole (by total size and by age), as RabbitMQ's osiris log does. Only the open segment (and closed ones not
yet written) stays in memory; the rest is read from the segment files (issue 19). Pure: time comes in as
``now_ms``, files through `StreamDisk`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Protocol

from broker.core.message import Message

# RabbitMQ's default x-stream-max-segment-size-bytes (500 MB, streams.md).
DEFAULT_SEGMENT_SIZE_BYTES = 500_000_000


class StreamDisk(Protocol):
    """A stream's segment files as the core reads them (broker.storage.stream_reader): a closed segment
    whose entries are all written is dropped from memory and read back from its file, sequentially, in
    batches of about ``max_bytes``, as osiris readers read chunks."""

    def written(self) -> int:
        """The next offset not yet written and readable in the files (entries below it can be read)."""
        ...

    def read(
        self, segment_first: int, offset: int, position: int, max_bytes: int
    ) -> tuple[list[Message], int]:
        """Entries from ``offset`` within the segment, about ``max_bytes`` of them, and the file position
        after them. ``position`` is where ``offset`` starts when the caller knows it (its previous read's
        end), else -1: the segment's sparse index is searched."""
        ...

    def offset_at(self, segment_first: int, timestamp_ms: int) -> int | None:
        """The first offset in the segment appended at or after ``timestamp_ms`` (through its index), None
        when every entry is older."""
        ...


@dataclass(slots=True)
class Segment:
    """Consecutive entries from ``first_offset``; ``timestamps_ms`` parallel to ``messages`` while the
    segment is ``resident``. A closed segment whose entries are all on disk is dropped from memory: it keeps
    only its count, size and last append time, and is read back through `StreamDisk`."""

    first_offset: int
    messages: list[Message] = field(default_factory=list)
    timestamps_ms: list[int] = field(default_factory=list)
    size_bytes: int = 0
    count: int = 0
    last_ms: int = 0
    resident: bool = True
    # Out of memory: the journal's mark and message id of the entries the journal sampled at publish, by
    # offset, so a replay from the file is journaled against the published message as before.
    marks: dict[int, tuple[tuple[int, int], int]] = field(default_factory=dict)

    @property
    def next_offset(self) -> int:
        return self.first_offset + self.count

    def evict(self) -> None:
        first = self.first_offset
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

    __slots__ = ("disk", "max_segment_size_bytes", "segments")

    def __init__(self, max_segment_size_bytes: int | None = None, first_offset: int = 0) -> None:
        self.max_segment_size_bytes = max_segment_size_bytes or DEFAULT_SEGMENT_SIZE_BYTES
        self.segments: list[Segment] = [Segment(first_offset)]
        self.disk: StreamDisk | None = None  # set when the store keeps segment files the log can read

    @property
    def first_offset(self) -> int:
        return self.segments[0].first_offset

    @property
    def next_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def message_count(self) -> int:
        return self.next_offset - self.first_offset

    @property
    def size_bytes(self) -> int:
        return sum(segment.size_bytes for segment in self.segments)

    @property
    def resident_bytes(self) -> int:
        """The body bytes held in memory: the open segment and closed ones not yet written."""
        return sum(segment.size_bytes for segment in self.segments if segment.resident)

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
        """Append at the tail; a full segment is closed first. Returns the new message's offset."""
        tail = self.segments[-1]
        if tail.count and tail.size_bytes >= self.max_segment_size_bytes:
            tail = Segment(tail.next_offset)
            self.segments.append(tail)
        offset = tail.next_offset
        tail.messages.append(message)
        tail.timestamps_ms.append(now_ms)
        tail.size_bytes += len(message.body)
        tail.count += 1
        tail.last_ms = now_ms
        return offset

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
            return segment.first_offset + bisect_left(segment.timestamps_ms, timestamp_ms)
        assert self.disk is not None  # only a log with files evicts
        found = self.disk.offset_at(segment.first_offset, timestamp_ms)
        return segment.next_offset if found is None else found

    def restore_segment(self, first_offset: int, messages: list[Message], timestamps_ms: list[int]) -> None:
        """Recovery: a stored segment, in order after the ones restored before it (the empty initial segment
        is replaced by the first)."""
        segment = Segment(
            first_offset,
            messages,
            timestamps_ms,
            sum(len(m.body) for m in messages),
            len(messages),
            timestamps_ms[-1] if timestamps_ms else 0,
        )
        self._restored(segment)

    def restore_closed(self, first_offset: int, count: int, size_bytes: int, last_ms: int) -> None:
        """Recovery: a closed segment left on disk (its entries are read back from its file when needed)."""
        self._restored(Segment(first_offset, [], [], size_bytes, count, last_ms, resident=False))

    def _restored(self, segment: Segment) -> None:
        if len(self.segments) == 1 and not self.segments[0].count:
            self.segments[0] = segment
        else:
            self.segments.append(segment)

    def apply_retention(self, max_bytes: int | None, max_age_ms: int | None, now_ms: int) -> list[Segment]:
        """Drop whole closed segments over ``max_bytes`` in total or older than ``max_age_ms`` (by their last
        append); the active (last) segment always stays. Returns the segments dropped."""
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
