"""A stream's append-only log in memory: messages at increasing offsets, grouped in segments that retention
removes whole (by total size and by age), as RabbitMQ's osiris log does. Pure: time comes in as ``now_ms``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from broker.core.message import Message

# RabbitMQ's default x-stream-max-segment-size-bytes (500 MB, streams.md).
DEFAULT_SEGMENT_SIZE_BYTES = 500_000_000


@dataclass(slots=True)
class Segment:
    """Consecutive entries from ``first_offset``; ``timestamps_ms`` parallel to ``messages``."""

    first_offset: int
    messages: list[Message] = field(default_factory=list)
    timestamps_ms: list[int] = field(default_factory=list)
    size_bytes: int = 0

    @property
    def next_offset(self) -> int:
        return self.first_offset + len(self.messages)


class StreamLog:
    """Offsets start at 0 and never change; ``first_offset`` moves up as retention drops segments."""

    __slots__ = ("max_segment_size_bytes", "segments")

    def __init__(self, max_segment_size_bytes: int | None = None, first_offset: int = 0) -> None:
        self.max_segment_size_bytes = max_segment_size_bytes or DEFAULT_SEGMENT_SIZE_BYTES
        self.segments: list[Segment] = [Segment(first_offset)]

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

    def append(self, message: Message, now_ms: int) -> int:
        """Append at the tail; a full segment is closed first. Returns the new message's offset."""
        tail = self.segments[-1]
        if tail.messages and tail.size_bytes >= self.max_segment_size_bytes:
            tail = Segment(tail.next_offset)
            self.segments.append(tail)
        offset = tail.next_offset
        tail.messages.append(message)
        tail.timestamps_ms.append(now_ms)
        tail.size_bytes += len(message.body)
        return offset

    def segment_of(self, offset: int) -> Segment:
        """The segment holding ``offset`` (between the head and the tail)."""
        return self.segments[bisect_right(self.segments, offset, key=lambda s: s.first_offset) - 1]

    def read(self, offset: int) -> tuple[Message, int] | None:
        """The message at ``offset`` and its append time, or None past the tail or before the head."""
        if offset < self.first_offset or offset >= self.next_offset:
            return None
        index = bisect_right(self.segments, offset, key=lambda s: s.first_offset) - 1
        segment = self.segments[index]
        position = offset - segment.first_offset
        return segment.messages[position], segment.timestamps_ms[position]

    def offset_at(self, timestamp_ms: int) -> int:
        """The first offset appended at or after ``timestamp_ms`` (the tail when none is): binary search over
        the segments by their last append, then within the segment, as osiris seeks by its timestamp index."""
        segments = self.segments
        index = bisect_left(
            segments, timestamp_ms, key=lambda s: s.timestamps_ms[-1] if s.timestamps_ms else 0
        )
        if index >= len(segments) or not segments[index].timestamps_ms:
            return self.next_offset
        segment = segments[index]
        return segment.first_offset + bisect_left(segment.timestamps_ms, timestamp_ms)

    def restore_segment(self, first_offset: int, messages: list[Message], timestamps_ms: list[int]) -> None:
        """Recovery: a stored segment, in order after the ones restored before it (the empty initial segment
        is replaced by the first)."""
        segment = Segment(first_offset, messages, timestamps_ms, sum(len(m.body) for m in messages))
        if len(self.segments) == 1 and not self.segments[0].messages:
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
            too_old = max_age_ms is not None and head.timestamps_ms[-1] < now_ms - max_age_ms
            if not (too_big or too_old):
                break
            dropped.append(head)
            del self.segments[0]
        return dropped
