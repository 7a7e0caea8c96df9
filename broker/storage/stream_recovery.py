"""A stream queue's recovery at start-up (broker.storage.recovery calls it for each durable stream): its
segments read back from the store, or a stream stored as message rows by an earlier version migrated to
segment files. Loaded only when a stream is recovered (not at every start)."""

from __future__ import annotations

from broker.core.model.message import Message
from broker.core.queues.queue import Envelope, Queue
from broker.core.streams.stream_log import ClosedSegmentMeta
from broker.core.streams.stream_queue import StreamPath
from broker.storage.base import KEY_SEQ_BITS, MessageRow, Store
from broker.storage.stored_message import message_of
from broker.storage.writer import StoreWriter

_SEQ_MASK = (1 << KEY_SEQ_BITS) - 1


def recover_stream(queue: Queue, stream: StreamPath, store: Store, writer: StoreWriter) -> int:
    """A stream's segments, read back from its segment files; returns how many entries it holds."""
    segments: list[tuple[int, int, list[tuple[Message, int]] | ClosedSegmentMeta]] = []
    for first_offset, skipped, records in store.stream_segments(queue.store_id):
        if isinstance(records, ClosedSegmentMeta):  # a closed segment: its entries stay in its file
            segments.append((first_offset, skipped, records))
            continue
        entries = [
            (message_of(exchange, key, header, body), ts) for _o, ts, exchange, key, header, body in records
        ]
        segments.append((first_offset, skipped, entries))
    legacy = list(store.messages(queue.store_id))
    if legacy and not segments:
        segments.extend(_legacy_segments(legacy))
    stream.recover_segments(segments)
    if legacy:
        _migrate_legacy(queue, stream, legacy, writer)
    return stream.log.message_count


def _legacy_segments(rows: list[MessageRow]) -> list[tuple[int, int, list[tuple[Message, int]]]]:
    """A stream stored as message rows (before segment files): the row key's seq is offset + 1 and the
    append time rode in expires_at. Each run of consecutive offsets becomes a segment (the log keeps what
    follows a gap, as it did)."""
    segments: list[tuple[int, int, list[tuple[Message, int]]]] = []
    for key, exchange, routing_key, header, body, appended_ms, _delivered in rows:
        offset = (key & _SEQ_MASK) - 1
        if not segments or segments[-1][0] + len(segments[-1][2]) != offset:
            segments.append((offset, 0, []))
        segments[-1][2].append((message_of(exchange, routing_key, header, body), appended_ms or 0))
    return segments


def _migrate_legacy(queue: Queue, stream: StreamPath, rows: list[MessageRow], writer: StoreWriter) -> None:
    """Write a row-stored stream out as segment files and delete its rows, in the first commit."""
    for segment in stream.log.segments:
        pairs = zip(segment.messages, segment.timestamps_ms, strict=True)
        for index, (message, appended_ms) in enumerate(pairs):
            writer.stream_appended(
                queue, segment.first_offset, segment.entries_first + index, appended_ms, message
            )
    # messages_removed names rows through persistent envelopes (it skips transient ones, which a classic
    # queue never stores; a stream stored every message).
    stand_in = Message("", "", b"", b"", None, 2)
    writer.messages_removed(queue, [Envelope(row[0] & _SEQ_MASK, stand_in) for row in rows])
