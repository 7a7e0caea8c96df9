"""Compaction of the message segment files (broker.storage.segments): which closed segment is sparse enough
to copy, and the copy, made within a group commit so that the old file goes once that commit is durable; and
the unlinking of segments nothing live needs any more."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import structlog

from broker.storage.base import KEY_SEQ_BITS, StorageError
from broker.storage.segment_format import (
    Part,
    counts_record,
    decode_message,
    fsync_directory,
    message_key_of,
    message_record,
    records,
    segment_name,
)


class SegmentLog(Protocol):
    """What compaction reads and updates of broker.storage.segments.SegmentLog (a protocol, so that the two
    modules do not import each other)."""

    directory: Path
    segment_bytes: int
    live: dict[int, dict[int, int]]  # entries: segment << 33 | length << 1 | delivered
    counts: dict[int, int]
    live_bytes: dict[int, int]
    sizes: dict[int, int]
    refs: dict[int, set[int]]

    def added(self, key: int, segment: int, length: int, delivered: int) -> None: ...


log = structlog.get_logger("warrenmq.storage")

COMPACT_BELOW = 0.5  # a closed segment with less than this share of its bytes live is copied forward
_MESSAGE_KIND = b"M"[0]


def last_message_records(data: memoryview) -> dict[int, int]:
    """Message key -> offset of its last ``M`` record in a segment's records: the one an index entry of that
    segment stands for (a later record of a key replaces an earlier one)."""
    return {
        message_key_of(payload): offset for offset, _, payload in records(data) if payload[0] == _MESSAGE_KIND
    }


def sparse_segment(segments: SegmentLog, current: int) -> int | None:
    """The sparsest closed segment less than half live, once the dead bytes of the closed segments exceed
    both their live bytes and a segment's size (disk use then stays under about twice the live messages
    plus three segments). The newest closed segment is left alone, and so is everything while a backlog
    drains in order: what is left in a segment that just filled, or at the head of a draining queue, is
    about to be acked, and copying it would double the writes for nothing."""
    closed = sorted(number for number in segments.sizes if number != current)[:-1]
    live = sum(segments.live_bytes[number] for number in closed)
    dead = sum(segments.sizes[number] for number in closed) - live
    if dead <= max(live, segments.segment_bytes):
        return None
    ratio, victim = min(
        (
            (segments.live_bytes[number] / segments.sizes[number], number)
            for number in closed
            if segments.live_bytes[number]
        ),
        default=(1.0, None),
    )
    return victim if ratio < COMPACT_BELOW else None


def compact(segments: SegmentLog, victim: int, segment: int, position: int, parts: list[Part]) -> int:
    """Copies ``victim``'s live messages into ``parts`` (written at ``position`` on): the victim is then
    dead and goes once the copies are durable. The copies carry each message's delivered mark and delivery
    count as they are now."""
    path = segments.directory / segment_name(victim)
    try:
        data = memoryview(path.read_bytes())
    except OSError as error:
        raise StorageError(f"cannot read {path}: {error}") from error
    counted = []
    copied = 0
    readable = data[: segments.sizes[victim]]
    last = last_message_records(readable)
    for offset, length, payload in records(readable):
        if payload[0] != _MESSAGE_KIND:
            continue
        key = message_key_of(payload)
        queue = segments.live.get(key >> KEY_SEQ_BITS)
        live = None if queue is None else queue.get(key)
        if live is None or live >> 33 != victim or last[key] != offset:
            continue  # acked, dropped or written again later
        delivered = live & 1
        row = decode_message(payload)
        if row[6] == delivered:
            record = [bytes(data[offset : offset + length])]
        else:
            record = list(message_record((*row[:6], delivered)))
        count = segments.counts.get(key)
        segments.added(key, segment, length, delivered)
        parts += record
        position += length
        copied += 1
        if count:
            counted.append((key, count, delivered))
            segments.counts[key] = count  # added() cleared it: the C record below restores it at replay
    if counted:
        record_bytes = counts_record(counted)
        parts.append(record_bytes)
        position += len(record_bytes)
    segments.refs[segment].add(victim)  # the copies replace what is there: it must go first
    log.info("message_segment_compacted", segment=victim, messages=copied, into=segment)
    return position


def unlink_dead(segments: SegmentLog, current: int | None, sync: Callable[[], None]) -> None:
    """Unlink every closed segment with no live message whose earlier dependencies are gone (``sync``
    first: the records that killed them must be on disk). One that depends on a segment unlinked in a pass
    waits for the next pass, after the directory's fsync."""
    synced = False
    while True:
        existing = set(segments.sizes)
        doomed = [
            number
            for number in sorted(existing)
            if number != current
            and segments.live_bytes[number] == 0
            and not (segments.refs[number] & existing)
        ]
        if not doomed:
            return
        if not synced:
            sync()  # under always they already are
            synced = True
        for number in doomed:
            try:
                os.unlink(segments.directory / segment_name(number))
            except FileNotFoundError:
                pass
            del segments.sizes[number], segments.live_bytes[number], segments.refs[number]
        fsync_directory(segments.directory)
        for refs in segments.refs.values():
            refs.difference_update(doomed)
