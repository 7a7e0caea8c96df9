"""The core's view of a stream's segment files (`broker.core.stream_log.StreamDisk`): closed segments are
read back sequentially, a bounded batch of chunks per call, on the event loop (plain buffered file reads of
at most ``max_bytes`` plus one chunk; the writer thread only ever appends to the open segment, which is never
read from here). Attaching at an offset or a timestamp goes through the segment's sparse index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from broker.core.message import Message
from broker.storage.stream_files import (
    CHUNK,
    SEGMENT_SUFFIX,
    SegmentReader,
    decode_chunks,
    segment_name,
)
from protocol.fastpath import parse_content_header


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


def message_of(exchange: str, routing_key: str, header: bytes, body: bytes) -> Message:
    """A stored entry as a message (parse_content_header caches the parse of a repeated header)."""
    info = parse_content_header(header)
    return Message(
        exchange,
        routing_key,
        header,
        body,
        info.headers,
        info.delivery_mode or 1,
        info.priority,
        info.expiration,
    )
