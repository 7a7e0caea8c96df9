"""The core's view of a stream's segment files (`broker.core.queues.stream_disk.StreamDisk`): closed segments
are read back sequentially, a bounded batch of chunks per call, on the event loop (plain buffered file reads
of at most ``max_bytes`` plus one chunk; the writer thread only ever appends to the open segment, which is
never read from here). Attaching at an offset or a timestamp goes through the segment's sparse index
(`SegmentReader`)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator
from pathlib import Path

from broker.core.model.message import Message
from broker.storage.stored_message import message_of
from broker.storage.stream_files import (
    CHUNK,
    INDEX_ENTRY,
    INDEX_SUFFIX,
    SEAL_MARK,
    SEGMENT_SUFFIX,
    StreamRecord,
    decode_chunks,
    segment_name,
)


class SegmentFilesDisk:
    """One stream's directory of segment files; ``written`` tells how far the writer thread got."""

    __slots__ = ("directory", "written")

    def __init__(self, directory: Path, written: Callable[[], int]) -> None:
        self.directory = directory
        self.written = written

    def _path(self, segment_first: int) -> Path:
        return (self.directory / segment_name(segment_first)).with_suffix(SEGMENT_SUFFIX)

    def read(
        self, segment_first: int, offset: int, position: int, max_bytes: int
    ) -> tuple[list[Message], int]:
        path = self._path(segment_first)
        if position < 0:
            position = SegmentReader(path).position_of_offset(offset)
        messages: list[Message] = []
        consumed = 0
        with open(path, "rb") as segment:
            segment.seek(position)
            while consumed < max_bytes:
                head = segment.read(CHUNK.size)
                if len(head) < CHUNK.size:
                    break
                data = head + segment.read(CHUNK.unpack(head)[1] + 8 - CHUNK.size)
                chunks, _valid = decode_chunks(data)
                if not chunks:
                    break
                position += len(data)
                consumed += len(data)
                for entry_offset, _ts, exchange, routing_key, header, body in chunks[0][3]:
                    if entry_offset >= offset:
                        messages.append(message_of(exchange, routing_key, header, body))
        return messages, position

    def offset_at(self, segment_first: int, timestamp_ms: int) -> int | None:
        records = SegmentReader(self._path(segment_first)).read_from_timestamp(timestamp_ms, 1)
        return records[0][0] if records else None


class SegmentReader:
    """Attach to a segment at an offset or a timestamp through its sparse index: a binary search over the
    index entries, then a read from the entry's position (at most ``INDEX_INTERVAL_BYTES`` plus a chunk
    before the wanted record), never a scan from the start of the segment."""

    def __init__(self, segment_path: Path) -> None:
        self.path = segment_path
        raw = segment_path.with_suffix(INDEX_SUFFIX).read_bytes()
        whole = len(raw) - len(raw) % INDEX_ENTRY.size
        entries = [INDEX_ENTRY.unpack_from(raw, at) for at in range(0, whole, INDEX_ENTRY.size)]
        entries = [entry for entry in entries if entry[0] != SEAL_MARK]
        self._offsets = [entry[0] for entry in entries]
        self._timestamps = [entry[1] for entry in entries]
        self._positions = [entry[2] for entry in entries]
        self.bytes_read = 0  # what the last read cost (tests check it stays bounded)

    def position_of_offset(self, offset: int) -> int:
        at = bisect_right(self._offsets, offset) - 1
        return self._positions[max(at, 0)] if self._positions else 0

    def position_of_timestamp(self, timestamp_ms: int) -> int:
        """The indexed chunk before the first one that starts at or after ``timestamp_ms`` (appends are in
        time order, so the first record at or after it is in that chunk or later)."""
        at = bisect_right(self._timestamps, timestamp_ms - 1) - 1
        return self._positions[max(at, 0)] if self._positions else 0

    def read_from_offset(self, offset: int, limit: int) -> list[StreamRecord]:
        return list(self._read(self.position_of_offset(offset), offset, None, limit))

    def read_from_timestamp(self, timestamp_ms: int, limit: int) -> list[StreamRecord]:
        return list(self._read(self.position_of_timestamp(timestamp_ms), None, timestamp_ms, limit))

    def _read(
        self, position: int, offset: int | None, timestamp_ms: int | None, limit: int
    ) -> Iterator[StreamRecord]:
        self.bytes_read = 0
        produced = 0
        with open(self.path, "rb") as segment:
            segment.seek(position)
            while produced < limit:
                head = segment.read(CHUNK.size)
                if len(head) < CHUNK.size:
                    return
                length = CHUNK.unpack(head)[1]
                data = head + segment.read(length + 8 - CHUNK.size)
                self.bytes_read += len(data)
                chunks, _valid = decode_chunks(data)
                if not chunks:
                    return
                for record in chunks[0][3]:
                    if offset is not None and record[0] < offset:
                        continue
                    if timestamp_ms is not None and record[1] < timestamp_ms:
                        continue
                    yield record
                    produced += 1
                    if produced >= limit:
                        return
