"""Stream logs on disk, as RabbitMQ's osiris keeps them: per stream queue a directory of append-only segment
files, each with a sparse index, written by the store's writer thread inside the group commit.

Layout: ``<data>/streams/<queue id>/<first offset:020>.segment`` and ``.index`` beside it. A segment holds
the entries of one in-memory segment of the core's `StreamLog` (the core decides when a segment rolls, at
x-stream-max-segment-size-bytes), so retention deletes exactly the files of the segments it dropped.

A segment is a sequence of chunks, one per stream per commit (osiris writes a chunk per batch too)::

    chunk  = crc32 u32 | payload length u32 | first offset u64 | first timestamp ms i64 | count u32 | records
    record = timestamp ms i64 | exchange len u16 | routing key len u16 | header len u32 | body len u32 | bytes

The crc covers everything after the length, so a chunk torn by a crash (never confirmed: confirms wait for
the write) is recognised and cut off at recovery. The index has an entry (chunk first offset u64, chunk first
timestamp i64, file position u64) for the first chunk and then whenever ``INDEX_INTERVAL_BYTES`` were written
since the last entry, so attaching at an offset or a timestamp is a binary search in the index plus a read
of at most that many bytes, whatever the length of the stream. When a segment rolls its index is sealed
(count, body bytes, last append, file size, and the segment's size as osiris counts it and the offsets its
tracking snapshot took): start-up reads a closed segment's seal only, and the broker reads its entries from
the file when a consumer needs them, attaching through the index (`broker.storage.stream_reader`).

A segment after a stream's first is named by the offset of RabbitMQ's tracking snapshot chunk, which this
format does not write: its first chunk starts one offset later (the gap `broker.core.streams.stream_log`
keeps).
"""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from broker.core.streams.stream_file_bytes import SNAPSHOT_OFFSETS, EntrySizer, segment_start_bytes
from broker.core.streams.stream_log import ClosedSegmentMeta

CHUNK = struct.Struct(">IIQqI")
RECORD = struct.Struct(">qHHII")
INDEX_ENTRY = struct.Struct(">QqQ")
INDEX_INTERVAL_BYTES = 64 * 1024
# A closed segment's index ends with a seal of three entries: (mark, osiris size, snapshot offsets), (mark,
# last append ms, body bytes) and (mark, entry count, segment file size), so start-up knows a closed segment
# without reading it (only the open segment is read back). An index without a valid seal (older files, a
# crash) makes recovery scan it.
SEAL_MARK = (1 << 64) - 1
SEAL_SIZE = 3 * INDEX_ENTRY.size
SEGMENT_SUFFIX = ".segment"
INDEX_SUFFIX = ".index"

# (queue id, segment first offset, offset, appended ms, exchange, routing key, content header, body)
StreamRow = tuple[int, int, int, int, str, str, bytes, bytes]
# (offset, appended ms, exchange, routing key, content header, body)
StreamRecord = tuple[int, int, str, str, bytes, bytes]
# A segment at start-up: its first offset, the offsets its snapshot took, and its records (the open one, or
# a closed one without a valid seal) or its seal (a closed one: its entries stay in the file).
StoredSegment = tuple[int, int, list[StreamRecord] | ClosedSegmentMeta]


def segment_name(first_offset: int) -> str:
    return f"{first_offset:020d}"


def encode_chunk(records: list[StreamRecord]) -> bytes:
    parts: list[bytes] = []
    add, pack = parts.append, RECORD.pack
    names: dict[str, bytes] = {}  # a chunk's entries mostly share their exchange and routing key
    for _offset, timestamp, exchange, routing_key, header, body in records:
        exchange_bytes = names.get(exchange)
        if exchange_bytes is None:
            exchange_bytes = names[exchange] = exchange.encode()
        key_bytes = names.get(routing_key)
        if key_bytes is None:
            key_bytes = names[routing_key] = routing_key.encode()
        add(pack(timestamp, len(exchange_bytes), len(key_bytes), len(header), len(body)))
        add(exchange_bytes)
        add(key_bytes)
        add(header)
        add(body)
    payload = b"".join(parts)
    first_offset, first_timestamp = records[0][0], records[0][1]
    tail = CHUNK.pack(0, 0, first_offset, first_timestamp, len(records))[8:] + payload
    return struct.pack(">II", zlib.crc32(tail), len(tail)) + tail


def decode_chunks(data: bytes) -> tuple[list[tuple[int, int, int, list[StreamRecord]]], int]:
    """The whole chunks in ``data`` as (position, first offset, first timestamp, records), and the length of
    the valid prefix (a torn or corrupt chunk ends it)."""
    chunks: list[tuple[int, int, int, list[StreamRecord]]] = []
    position = 0
    while position + CHUNK.size <= len(data):
        crc, length, first_offset, first_timestamp, count = CHUNK.unpack_from(data, position)
        end = position + 8 + length
        if end > len(data) or zlib.crc32(data[position + 8 : end]) != crc:
            break
        records: list[StreamRecord] = []
        cursor = position + CHUNK.size
        for index in range(count):
            timestamp, exchange_len, key_len, header_len, body_len = RECORD.unpack_from(data, cursor)
            cursor += RECORD.size
            exchange = data[cursor : cursor + exchange_len].decode()
            cursor += exchange_len
            routing_key = data[cursor : cursor + key_len].decode()
            cursor += key_len
            header = data[cursor : cursor + header_len]
            cursor += header_len
            body = data[cursor : cursor + body_len]
            cursor += body_len
            records.append((first_offset + index, timestamp, exchange, routing_key, header, body))
        chunks.append((position, first_offset, first_timestamp, records))
        position = end
    return chunks, position


@dataclass
class _Totals:
    """A segment's figures for its seal, added up as its records are written (or scanned)."""

    first_offset: int
    count: int = 0
    body_bytes: int = 0
    last_ms: int = 0
    skipped: int = 0  # offsets RabbitMQ's tracking snapshot takes before the first record
    counted_bytes: int = 0  # the segment as osiris would write it (`broker.core.streams.stream_file_bytes`)

    def add(self, records: list[StreamRecord], sizer: EntrySizer) -> None:
        if not self.count and records:
            self.skipped = records[0][0] - self.first_offset
            self.counted_bytes = segment_start_bytes(self.skipped)
        for _offset, _ts, exchange, routing_key, header, body in records:
            after_snapshot = self.skipped > 0 and not self.count
            self.counted_bytes += sizer.entry_chunk_bytes(
                exchange, routing_key, header, len(body), after_snapshot
            )
            self.count += 1
            self.body_bytes += len(body)
        if records:
            self.last_ms = records[-1][1]

    def seal(self, file_size: int) -> bytes:
        return (
            INDEX_ENTRY.pack(SEAL_MARK, self.counted_bytes, self.skipped)
            + INDEX_ENTRY.pack(SEAL_MARK, self.last_ms, self.body_bytes)
            + INDEX_ENTRY.pack(SEAL_MARK, self.count, file_size)
        )


# The same totals for the PostgreSQL store's segment rows (broker.storage.postgres.streams).
SegmentTotals = _Totals


@dataclass
class _Tail:
    """The segment a stream appends to: open handles and where its next index entry is due."""

    segment: BinaryIO
    index: BinaryIO
    size: int
    indexed_at: int  # file position of the last index entry (-1: none yet)
    totals: _Totals

    @property
    def first_offset(self) -> int:
        return self.totals.first_offset


class StreamFiles:
    """The writer thread's side: appends chunks, drops segments and whole streams, reads them back at boot."""

    def __init__(self, root: Path, fsync: bool) -> None:
        self.root = root
        self.fsync = fsync
        self._tails: dict[int, _Tail] = {}
        # Per stream, the next offset not yet written and flushed: the event loop reads closed segments
        # below it from the files (a plain dict read there; only this thread writes it).
        self.written: dict[int, int] = {}
        self.sizer = EntrySizer()

    def directory(self, queue_id: int) -> Path:
        return self.root / str(queue_id)

    def max_queue_id(self) -> int:
        """A stream directory keeps its id taken, even if its queue row is gone (a crash mid-delete)."""
        if not self.root.is_dir():
            return 0
        return max((int(entry.name) for entry in self.root.iterdir() if entry.name.isdigit()), default=0)

    # -- writing

    def append(self, rows: list[StreamRow]) -> None:
        """One chunk per run of rows of the same stream segment; fsync'd before returning when asked."""
        touched: dict[int, _Tail] = {}
        ends: dict[int, int] = {}
        run: list[StreamRecord] = []
        key: tuple[int, int] | None = None
        for row in rows:
            row_key = (row[0], row[1])
            if row_key != key and run and key is not None:
                touched[key[0]] = self._write(key[0], key[1], run)
                run = []
            key = row_key
            run.append(row[2:])
            ends[row[0]] = row[2] + 1
        if run and key is not None:
            touched[key[0]] = self._write(key[0], key[1], run)
        for tail in touched.values():
            tail.segment.flush()
            tail.index.flush()
            if self.fsync:
                os.fsync(tail.segment.fileno())
        self.written.update(ends)

    def _write(self, queue_id: int, segment_first: int, records: list[StreamRecord]) -> _Tail:
        tail = self._tails.get(queue_id)
        if tail is None or tail.first_offset != segment_first:
            if tail is not None:  # the segment rolled: it is complete, seal its index
                tail.index.write(tail.totals.seal(tail.size))
                self._close_tail(tail)
            tail = self._open(queue_id, segment_first)
            self._tails[queue_id] = tail
        chunk = encode_chunk(records)
        if tail.indexed_at < 0 or tail.size - tail.indexed_at >= INDEX_INTERVAL_BYTES:
            tail.index.write(INDEX_ENTRY.pack(records[0][0], records[0][1], tail.size))
            tail.indexed_at = tail.size
        tail.segment.write(chunk)
        tail.size += len(chunk)
        tail.totals.add(records, self.sizer)
        return tail

    def roll(self, queue_id: int, segment_first: int) -> None:
        """A segment opened before any entry went into it: its (empty) file is created and the segment
        before it sealed, unless appends of this commit already went past it."""
        tail = self._tails.get(queue_id)
        if tail is not None and tail.first_offset >= segment_first:
            return
        if tail is not None:
            tail.index.write(tail.totals.seal(tail.size))
            self._close_tail(tail)
        self._tails[queue_id] = self._open(queue_id, segment_first)

    def _open(self, queue_id: int, segment_first: int) -> _Tail:
        directory = self.directory(queue_id)
        created = not directory.is_dir()
        directory.mkdir(parents=True, exist_ok=True)
        base = directory / segment_name(segment_first)
        segment_path = base.with_suffix(SEGMENT_SUFFIX)
        new_file = not segment_path.exists()
        segment = open(segment_path, "ab")  # noqa: SIM115 - kept open while the segment is the tail
        index = open(base.with_suffix(INDEX_SUFFIX), "ab")  # noqa: SIM115
        size = segment.tell()
        entries = index.tell() // INDEX_ENTRY.size
        indexed_at = -1
        if entries:
            with open(base.with_suffix(INDEX_SUFFIX), "rb") as reader:
                reader.seek((entries - 1) * INDEX_ENTRY.size)
                indexed_at = INDEX_ENTRY.unpack(reader.read(INDEX_ENTRY.size))[2]
        if self.fsync and new_file:  # the new name must survive a power loss too
            _fsync_directory(directory)
            if created:
                _fsync_directory(self.root)
        tail = _Tail(segment, index, size, indexed_at, _Totals(segment_first))
        if size:  # the open segment of a restarted broker: its totals for the seal (read once, bounded)
            records = [r for chunk in decode_chunks(segment_path.read_bytes())[0] for r in chunk[3]]
            tail.totals.add(records, self.sizer)
        return tail

    def _close_tail(self, tail: _Tail) -> None:
        tail.segment.close()
        tail.index.close()

    def drop_segments(self, queue_id: int, firsts: list[int]) -> None:
        """Retention: the whole files of the segments the core dropped."""
        directory = self.directory(queue_id)
        for first in firsts:
            tail = self._tails.get(queue_id)
            if tail is not None and tail.first_offset == first:
                self._close_tail(self._tails.pop(queue_id))
            base = directory / segment_name(first)
            base.with_suffix(SEGMENT_SUFFIX).unlink(missing_ok=True)
            base.with_suffix(INDEX_SUFFIX).unlink(missing_ok=True)

    def drop_queue(self, queue_id: int) -> None:
        self.written.pop(queue_id, None)
        tail = self._tails.pop(queue_id, None)
        if tail is not None:
            self._close_tail(tail)
        shutil.rmtree(self.directory(queue_id), ignore_errors=True)

    def close(self) -> None:
        for tail in self._tails.values():
            self._close_tail(tail)
        self._tails.clear()

    # -- recovery

    def segments(self, queue_id: int) -> Iterator[StoredSegment]:
        """Each segment's first offset, in order, and the offsets its snapshot took, with its records for the
        last (open) segment and for a closed one whose index has no valid seal, else the seal's totals (the
        file is not read). A torn chunk
        is cut off (with every later segment: they were written by the same unconfirmed commit), and each
        scanned index is rebuilt if it does not match its segment."""
        directory = self.directory(queue_id)
        if not directory.is_dir():
            return
        paths = sorted(directory.glob("*" + SEGMENT_SUFFIX))
        # The open segment is the last file, empty when it was opened with no entry yet (a roll while a
        # reader waited at the tail, or a crash before its first chunk): its snapshot took its first offset.
        last = len(paths) - 1
        for number, path in enumerate(paths):
            closed = number < last
            meta = _sealed(path) if closed else None
            first = int(path.stem)
            if meta is not None:
                self.written[queue_id] = first + meta.skipped + meta.count
                yield first, meta.skipped, meta
                continue
            data = path.read_bytes()
            chunks, valid = decode_chunks(data)
            if valid < len(data):
                with open(path, "r+b") as segment:
                    segment.truncate(valid)
                for later in paths[number + 1 :]:
                    later.unlink()
                    later.with_suffix(INDEX_SUFFIX).unlink(missing_ok=True)
                closed = False
            records = [record for chunk in chunks for record in chunk[3]]
            sealed = None
            if closed and records:
                totals = _Totals(first)
                totals.add(records, self.sizer)
                sealed = totals.seal(valid)
            _repair_index(path.with_suffix(INDEX_SUFFIX), chunks, sealed)
            if records:
                self.written[queue_id] = records[-1][0] + 1
            if records or number in (0, last):
                yield first, snapshot_offsets(first, records), records
            if valid < len(data):
                return


def snapshot_offsets(first: int, records: list[StreamRecord]) -> int:
    """The offsets a segment's snapshot took: before its first record, or one for an empty later segment."""
    if records:
        return records[0][0] - first
    return SNAPSHOT_OFFSETS if first else 0


def _sealed(path: Path) -> ClosedSegmentMeta | None:
    """A closed segment's totals from its index's seal, if the seal is whole and names the segment file's
    size (else the segment is scanned)."""
    index = path.with_suffix(INDEX_SUFFIX)
    try:
        with open(index, "rb") as reader:
            size = reader.seek(0, os.SEEK_END)
            if size < SEAL_SIZE or size % INDEX_ENTRY.size:
                return None
            reader.seek(size - SEAL_SIZE)
            raw = reader.read(SEAL_SIZE)
    except FileNotFoundError:
        return None
    mark, counted_bytes, skipped = INDEX_ENTRY.unpack_from(raw, 0)
    mark_2, last_ms, body_bytes = INDEX_ENTRY.unpack_from(raw, INDEX_ENTRY.size)
    mark_3, count, file_size = INDEX_ENTRY.unpack_from(raw, 2 * INDEX_ENTRY.size)
    if mark != SEAL_MARK or mark != mark_2 or mark != mark_3 or not count or file_size != path.stat().st_size:
        return None
    return ClosedSegmentMeta(count, body_bytes, last_ms, counted_bytes, skipped)


def _repair_index(
    path: Path, chunks: list[tuple[int, int, int, list[StreamRecord]]], seal: bytes | None
) -> None:
    """Rewrite ``path`` if it is not the index of these chunks (ending with ``seal`` for a closed segment,
    so the next start-up need not scan it)."""
    entries: list[bytes] = []
    indexed_at = -1
    for position, first_offset, first_timestamp, _records in chunks:
        if indexed_at < 0 or position - indexed_at >= INDEX_INTERVAL_BYTES:
            entries.append(INDEX_ENTRY.pack(first_offset, first_timestamp, position))
            indexed_at = position
    if seal is not None:
        entries.append(seal)
    wanted = b"".join(entries)
    if not path.exists() or path.read_bytes() != wanted:
        path.write_bytes(wanted)


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
