"""The message segment files of the SQLite store (broker.storage.sqlite): persistent messages of classic and
quorum queues as records appended to files shared by every durable queue, as RabbitMQ's ``rabbit_msg_store``
and LavinMQ's segments keep them, while SQLite keeps the topology.

``<data>/messages/<number:016>.seg``, written by the store's writer thread: each group commit appends its
records (broker.storage.segment_format) with one ``write`` and, under ``--fsync always``, makes them durable
with one ``fdatasync`` before the SQLite part of the same batch commits and before its confirms go out. A
message is written once and never read back while the broker runs; an ack is a small record.

In memory, per queue, each live message's segment, record length and delivered mark (one int), per
segment the bytes of its live messages, and per segment the earlier segments its records depend on (an ack,
a mark, a queue's deletion or a newer copy of a message recorded here concerns a message written there).
A segment is unlinked once no live message remains in it and no earlier segment it depends on is left: an
ack must outlive the message it acks, or the message would come back at the next start. A closed segment less
than half live has its live messages copied forward into the current segment within a group commit and is
unlinked after that commit's fdatasync, so disk use stays bounded by the live data.

fsync policies as the SQLite store's: ``always`` fdatasyncs each group commit; ``batch`` writes each commit
(a process crash loses nothing) and fdatasyncs when a segment fills and before unlinking; ``never`` leaves
flushing to the OS except when a segment fills and before an unlink (a compacted segment must not go before
its copies are on disk).
"""

from __future__ import annotations

import os
from operator import itemgetter
from pathlib import Path
from typing import Final

import structlog

from broker.storage.base import KEY_SEQ_BITS, Batch, MessageRow, StorageError, key_runs, unacked_adds
from broker.storage.segment_compaction import compact, last_message_records, sparse_segment, unlink_dead
from broker.storage.segment_format import (
    DELIVERED,
    DROPPED,
    HEAD,
    Part,
    counts_record,
    fsync_directory,
    keys_record,
    read_message,
    record_lengths,
    runs_record,
    segment_name,
    transaction_record,
    write_records,
)

log = structlog.get_logger("warrenmq.storage")

MESSAGES_DIR = "messages"
# RabbitMQ's msg_store files are 16 MiB by default (msg_store_file_size_limit), LavinMQ's segments 8 MiB: one
# unlink per 16 MiB of acked messages, and a compaction copies at most half of that.
SEGMENT_BYTES = 16 * 1024 * 1024

# A live message: ``segment << 33 | record length with its head << 1 | delivered``, a small int (segment
# numbers below 2**29). A tuple cost the writer thread, GIL held, an allocation the collector counts and two
# ints more, and ~100 bytes a message. Where a record is, recovery alone knows (`offsets`).
Entry = int
_LENGTH_MASK: Final = (1 << 32) - 1


class SegmentLog:
    def __init__(self, directory: Path, fsync: str, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.sync_each_commit = fsync == "always"
        self.sync_files = fsync != "never"  # new names and the close (never: neither)
        self.live: dict[int, dict[int, Entry]] = {}  # queue id -> message key -> entry
        # message key -> offset of its record, as recovery found them, for `rows` (the first load); the
        # writer records none, and drops these at its first write.
        self.offsets: dict[int, int] = {}
        self.counts: dict[int, int] = {}  # quorum delivery counts (> 0) by message key
        self.live_bytes: dict[int, int] = {}  # segment -> bytes of its live message records
        self.sizes: dict[int, int] = {}  # segment -> bytes written (every segment file there is)
        self.refs: dict[int, set[int]] = {}  # segment -> earlier segments its records concern
        self.next_segment = 1
        self._current: int | None = None
        self._fd: int | None = None
        self._unsynced = False  # written since the last fdatasync (batch and never)
        self._broken = False

    # -- the shared bookkeeping (the writer and recovery's replay)

    def forget(self, live: Entry, segment: int) -> None:
        """``live`` is dead as of a record written to ``segment``."""
        number = live >> 33
        self.live_bytes[number] -= (live >> 1) & _LENGTH_MASK
        if number != segment:
            self.refs[segment].add(number)

    def ack(self, key: int, segment: int) -> bool:
        queue = self.live.get(key >> KEY_SEQ_BITS)
        live = None if queue is None else queue.pop(key, None)
        if live is None:
            return False
        self.forget(live, segment)
        if self.counts:
            self.counts.pop(key, None)
        return True

    def mark(self, key: int, delivered: int, segment: int) -> bool:
        queue = self.live.get(key >> KEY_SEQ_BITS)
        if queue is None:
            return False
        live = queue.get(key)
        if live is None:
            return False
        queue[key] = (live & ~1) | (delivered & 1)
        if live >> 33 != segment:
            self.refs[segment].add(live >> 33)
        return True

    def drop_queue(self, queue_id: int, segment: int) -> bool:
        queue = self.live.pop(queue_id, None)
        if not queue:
            return False
        freed: dict[int, int] = {}  # segment -> bytes: one update per segment, not per message
        for live in queue.values():
            number = live >> 33
            freed[number] = freed.get(number, 0) + ((live >> 1) & _LENGTH_MASK)
        for number, size in freed.items():
            self.live_bytes[number] -= size
        self.refs[segment].update(freed)
        self.refs[segment].discard(segment)
        if self.counts:
            for key in queue:
                self.counts.pop(key, None)
        return True

    def added(self, key: int, segment: int, length: int, delivered: int) -> None:
        """A message record of ``length`` bytes written to ``segment`` (`_add_messages` inlines this)."""
        queue_id = key >> KEY_SEQ_BITS
        queue = self.live.get(queue_id)
        if queue is None:
            queue = self.live[queue_id] = {}
        old = queue.get(key)
        if old is not None:  # a newer record of the key replaces it, as INSERT OR REPLACE
            self.forget(old, segment)
        queue[key] = segment << 33 | length << 1 | (delivered & 1)
        self.live_bytes[segment] += length
        if self.counts:
            self.counts.pop(key, None)

    # -- reading

    def rows(self, queue_id: int) -> list[MessageRow]:
        """The live messages of a queue in key order, read back from their segments."""
        queue = self.live.get(queue_id)
        if not queue:
            return []
        by_segment: dict[int, list[tuple[int, Entry]]] = {}
        for key, live in queue.items():
            by_segment.setdefault(live >> 33, []).append((key, live))
        rows: list[MessageRow] = []
        head = HEAD.size
        for number, entries in by_segment.items():
            path = self.directory / segment_name(number)
            try:
                data = path.read_bytes()
            except OSError as error:
                raise StorageError(f"cannot read {path}: {error}") from error
            # After a write (tests read the store back while it runs), the segment's records say where.
            offsets = self.offsets or last_message_records(memoryview(data)[: self.sizes[number]])
            rows += [read_message(data, offsets[key] + head, live & 1) for key, live in entries]
        rows.sort(key=itemgetter(0))
        return rows

    def delivery_counts(self, queue_id: int) -> dict[int, int]:
        return {key: count for key, count in self.counts.items() if key >> KEY_SEQ_BITS == queue_id}

    # -- writing (the writer thread)

    def top_queue_id(self) -> int:
        return max((queue_id for queue_id, queue in self.live.items() if queue), default=0)

    def write(self, batch: Batch, deleted: list[int], transaction: int = 0) -> None:
        """The batch's message records, appended with one write (and one fdatasync under always). Apply order
        as the SQLite store's: the messages of queues the topology deletes (``deleted``), inserts, delivered
        marks, quorum returns, acks, then the dropped queues. ``transaction``: the batch's number when it has
        an SQLite part."""
        self._guarded([batch], deleted, transaction)

    def write_all(self, batches: list[Batch]) -> None:
        """Batches with message records only (no SQLite part), in order, as one append: one write and one
        fdatasync for all of them, each batch's records in `write`'s order. A message acked by a later batch
        of them is not written at all, as one batch never writes a message published and acked within it."""
        self._guarded(unacked_adds(batches) if len(batches) > 1 else batches, [], 0)

    def _guarded(self, batches: list[Batch], deleted: list[int], transaction: int) -> None:
        if self._broken:
            raise StorageError(f"{self.directory}: an earlier write failed; no more writes")
        try:
            self._write(batches, deleted, transaction)
        except BaseException:
            self._broken = True  # the index may be ahead of the file: the broker stops on this error
            raise

    def _write(self, batches: list[Batch], deleted: list[int], transaction: int) -> None:
        segment = self._open_segment()
        start = self.sizes[segment]
        if self.offsets:
            self.offsets = {}  # the first load is over (`rows`)
        parts: list[Part] = [transaction_record(transaction)] if transaction else []
        if deleted:
            gone_queues = [queue_id for queue_id in deleted if self.drop_queue(queue_id, segment)]
            if gone_queues:
                parts.append(keys_record(DROPPED, gone_queues))
        position = start + sum(map(len, parts))
        for batch in batches:
            position = self._records(batch, segment, position, parts)
        victim = sparse_segment(self, segment)
        if victim is not None:
            position = compact(self, victim, segment, position, parts)
        self._append(segment, start, parts, position)
        if position >= self.segment_bytes:
            self._roll()
        self.release()

    def _records(self, batch: Batch, segment: int, position: int, parts: list[Part]) -> int:
        """One batch's records into ``parts``, the index updated: inserts, delivered marks, quorum returns,
        acks, dropped queues. Returns the position after them."""
        if batch.added:
            position = self._add_messages(batch.added, segment, position, parts)
        records: list[bytes] = []
        if batch.delivered:
            # Marks of messages acked in this batch would be records for nothing (the SQLite store skips them
            # too); so would a mark already made.
            gone = set(batch.removed)
            marked = [key for key in batch.delivered if key not in gone and self._undelivered(key)]
            for key in marked:
                self.mark(key, 1, segment)
            if marked:
                records.append(keys_record(DELIVERED, marked))
        if batch.counted:
            counted = []
            for key, (count, delivered) in batch.counted.items():
                if self.mark(key, delivered, segment):
                    counted.append((key, count, delivered))
                    if count:
                        self.counts[key] = count
                    else:
                        self.counts.pop(key, None)
            if counted:
                records.append(counts_record(counted))
        if batch.removed:
            acked = self._ack_all(batch.removed, segment)
            if acked:
                records.append(runs_record(key_runs(acked)))
        if batch.dropped_queues:
            gone_queues = [
                queue_id for queue_id in batch.dropped_queues if self.drop_queue(queue_id, segment)
            ]
            if gone_queues:
                records.append(keys_record(DROPPED, gone_queues))
        parts += records
        return position + sum(map(len, records))

    def _add_messages(
        self, added: dict[int, MessageRow], segment: int, position: int, parts: list[Part]
    ) -> int:
        """The hot loop (the writer holds the GIL the loop thread needs for each Python step here): the rows
        go into ``parts`` as they are (`_append` packs them, in C where built, outside the GIL), and the index
        takes each record's length. Returns the position after them."""
        rows = list(added.values())
        lengths = record_lengths(rows)
        parts.append(rows)
        start = position
        live = self.live
        queue: dict[int, Entry] = {}
        queue_id = -1
        replaced: list[Entry] = []
        high = segment << 33
        for row, length in zip(rows, lengths, strict=True):
            key = row[0]
            if key >> KEY_SEQ_BITS != queue_id:
                queue_id = key >> KEY_SEQ_BITS
                queue = live.get(queue_id) or live.setdefault(queue_id, {})
            old = queue.get(key)
            queue[key] = high | length << 1 | (row[6] & 1)
            if old is not None:
                replaced.append(old)
            position += length
        self.live_bytes[segment] += position - start
        for old in replaced:  # a newer record of the key replaces it, as INSERT OR REPLACE
            self.forget(old, segment)
        if self.counts:
            for key in added:
                self.counts.pop(key, None)
        return position

    def _ack_all(self, keys: list[int], segment: int) -> list[int]:
        """`ack` of each key, inlined (the hot path of ack each): the keys that were live."""
        live, live_bytes, refs = self.live, self.live_bytes, self.refs[segment]
        acked = []
        queue: dict[int, Entry] | None = None
        queue_id = -1
        for key in keys:
            if key >> KEY_SEQ_BITS != queue_id:
                queue_id = key >> KEY_SEQ_BITS
                queue = live.get(queue_id)
            found = None if queue is None else queue.pop(key, None)
            if found is not None:
                number = found >> 33
                live_bytes[number] -= (found >> 1) & _LENGTH_MASK
                if number != segment:
                    refs.add(number)
                acked.append(key)
        if self.counts:
            for key in acked:
                self.counts.pop(key, None)
        return acked

    def _undelivered(self, key: int) -> bool:
        queue = self.live.get(key >> KEY_SEQ_BITS)
        live = None if queue is None else queue.get(key)
        return live is not None and not live & 1

    def _open_segment(self) -> int:
        if self._current is not None:
            return self._current
        number = self.next_segment
        path = self.directory / segment_name(number)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            if self.sync_files:  # the new name must survive a power loss too
                fsync_directory(self.directory)
        except OSError as error:
            raise StorageError(f"cannot create {path}: {error}") from error
        self.next_segment = number + 1
        self._current = number
        self.sizes[number] = 0
        self.live_bytes[number] = 0
        self.refs[number] = set()
        return number

    def _append(self, segment: int, start: int, parts: list[Part], end: int) -> None:
        if not parts:
            return
        fd = self._fd
        assert fd is not None
        try:
            # One call packs, writes and (under always) fdatasyncs, outside the GIL where built: the writer
            # waits for the GIL after each release, while the loop thread finishes what it is doing.
            written = write_records(fd, parts, self.sync_each_commit)
            if not self.sync_each_commit:
                self._unsynced = True
        except OSError as error:
            try:
                os.ftruncate(fd, start)  # a later start must not find half a batch followed by nothing
            except OSError:
                pass
            raise StorageError(f"cannot write {self.directory / segment_name(segment)}: {error}") from error
        assert start + written == end, (start, written, end)
        self.sizes[segment] = end

    def _sync(self) -> None:
        if self._fd is not None and self._unsynced:
            os.fdatasync(self._fd)
        self._unsynced = False

    def _roll(self) -> None:
        """The current segment is full: the next batch opens a new one. Synced under every policy (once per
        16 MiB): compacted copies in it must be on disk before their old segment is unlinked."""
        self._sync()
        if self._fd is not None:
            os.close(self._fd)
        self._fd = self._current = None
        self._unsynced = False

    # -- compaction and unlinking

    def release(self) -> None:
        # After every commit: unlink_dead (interpreted) only when a closed segment has no live message left,
        # which a look over the handful of segments here tells (it was ~2% of the broker's time per commit).
        current = self._current
        for number, size in self.live_bytes.items():
            if size == 0 and number != current:
                unlink_dead(self, current, self._sync)
                return

    def close(self) -> None:
        if self._fd is not None:
            try:
                if self.sync_files:
                    self._sync()
            finally:
                os.close(self._fd)
                self._fd = self._current = None
