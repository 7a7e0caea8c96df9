"""Start-up of the message segment files (broker.storage.segments): replay every segment in order into the
in-memory index the writer keeps, and cut what no commit covers.

The last segment may end in a record torn by a crash mid-append, or one whose CRC fails: nothing from there on
was confirmed (its fdatasync had not returned), so the file is cut there, durably, before anything is
appended after it. An earlier segment was complete and synced before the next one was created: a bad record
in it is damage, and the store refuses to start rather than guess which acks it lost (a lost ack would bring
its message back).

A batch with an SQLite part (a queue declared with its first messages, a queue deleted) starts with a ``T``
record whose number its SQLite transaction stores. A crash between the segment's fdatasync and that commit
leaves a ``T`` SQLite does not have: the log is cut there (that batch and anything after it, which can only
be a later batch never confirmed either), so no message outlives a transaction that did not commit, and no
message record is left behind for a queue whose declaration SQLite never committed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import structlog

from broker.storage.base import StorageError
from broker.storage.segment_format import (
    ACKED,
    COUNTED,
    DELIVERED,
    DROPPED,
    MESSAGE,
    TRANSACTION,
    decode_counts,
    decode_keys,
    decode_runs,
    fsync_directory,
    message_key_of,
    records,
    segment_name,
)
from broker.storage.segments import SegmentLog

log = structlog.get_logger("warrenmq.storage")

_NAME = re.compile(r"^(\d{16})\.seg$")
_MESSAGE, _DELIVERED, _COUNTED = MESSAGE[0], DELIVERED[0], COUNTED[0]
_ACKED, _DROPPED, _TRANSACTION = ACKED[0], DROPPED[0], TRANSACTION[0]
_FLAGS_AT = 17  # in a message payload: after its kind, key and expiry


def recover_segments(segments: SegmentLog, committed: int) -> None:
    """Fill ``segments``' index from its directory; ``committed``: the number of the last batch whose SQLite
    transaction committed."""
    directory = segments.directory
    try:
        names = sorted(os.listdir(directory)) if directory.is_dir() else []
    except OSError as error:
        raise StorageError(f"cannot list {directory}: {error}") from error
    numbers = [int(match.group(1)) for match in map(_NAME.match, names) if match]
    for index, number in enumerate(numbers):
        path = directory / segment_name(number)
        try:
            data = path.read_bytes()
        except OSError as error:
            raise StorageError(f"cannot read {path}: {error}") from error
        segments.sizes[number] = 0
        segments.live_bytes[number] = 0
        segments.refs[number] = set()
        end, uncommitted = _replay(segments, number, memoryview(data), committed)
        if end < len(data) and not uncommitted and index < len(numbers) - 1:
            raise StorageError(
                f"{path} is damaged at byte {end} (a torn or corrupt record before the last segment)"
            )
        if end < len(data):
            _cut(path, end, len(data), "uncommitted" if uncommitted else "torn")
        segments.sizes[number] = end
        if uncommitted:
            for later in numbers[index + 1 :]:
                _unlink(directory / segment_name(later))
            if index < len(numbers) - 1:
                fsync_directory(directory)
            numbers = numbers[: index + 1]
            break
    if numbers:
        segments.next_segment = numbers[-1] + 1
    segments.release()


def _replay(segments: SegmentLog, number: int, data: memoryview, committed: int) -> tuple[int, bool]:
    """Apply the intact records of one segment: where they end, and whether they end at a batch whose SQLite
    transaction did not commit."""
    end = 0
    for offset, length, payload in records(data):
        kind = payload[0]
        if kind == _MESSAGE:
            key = message_key_of(payload)
            segments.added(key, number, length, payload[_FLAGS_AT] & 1)
            segments.offsets[key] = offset
        elif kind == _ACKED:
            for first, last in decode_runs(payload):
                for key in range(first, last + 1):
                    segments.ack(key, number)
        elif kind == _DELIVERED:
            for key in decode_keys(payload):
                segments.mark(key, 1, number)
        elif kind == _COUNTED:
            for key, count, delivered in decode_counts(payload):
                if segments.mark(key, delivered, number):
                    if count:
                        segments.counts[key] = count
                    else:
                        segments.counts.pop(key, None)
        elif kind == _DROPPED:
            for queue_id in decode_keys(payload):
                segments.drop_queue(queue_id, number)
        elif kind == _TRANSACTION:
            if decode_keys(payload)[0] > committed:
                return offset, True
        else:  # a record this version does not know: written by a newer one
            raise StorageError(f"{segments.directory / segment_name(number)}: unknown record kind {kind}")
        end = offset + length
    return end, False


def _cut(path: Path, end: int, size: int, why: str) -> None:
    log.warning("message_segment_cut", path=str(path), at=end, dropped_bytes=size - end, reason=why)
    try:
        descriptor = os.open(path, os.O_WRONLY)
        try:
            os.ftruncate(descriptor, end)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    except OSError as error:
        raise StorageError(f"cannot cut {path}: {error}") from error


def _unlink(path: Path) -> None:
    log.warning("message_segment_uncommitted", path=str(path))
    try:
        os.unlink(path)
    except OSError as error:
        raise StorageError(f"cannot remove {path}: {error}") from error
