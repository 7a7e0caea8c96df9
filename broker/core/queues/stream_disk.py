"""The port through which a stream's log reads its segment files: declared here, with the queue's
persistence port that hands it out (`queue.QueuePersistence.stream_disk`); the store implements it
(broker.storage.stream_reader) and `broker.core.streams.stream_log` reads through it."""

from __future__ import annotations

from typing import Protocol

from broker.core.model.message import Message


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
