"""Compaction of the message segment files (broker.storage.segments): which closed segment is sparse enough
to copy, and the copy, made within a group commit so that the old file goes once that commit is durable."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import structlog

from broker.storage.base import KEY_SEQ_BITS, StorageError
from broker.storage.segment_format import (
    Part,
    counts_record,
    decode_message,
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
    live: dict[int, dict[int, tuple[int, int, int, int]]]
    counts: dict[int, int]
    live_bytes: dict[int, int]
    sizes: dict[int, int]
    refs: dict[int, set[int]]

    def added(self, key: int, entry: tuple[int, int, int, int]) -> None: ...


log = structlog.get_logger("warrenmq.storage")

COMPACT_BELOW = 0.5  # a closed segment with less than this share of its bytes live is copied forward


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
    for offset, length, payload in records(data[: segments.sizes[victim]]):
        if payload[0] != b"M"[0]:
            continue
        key = message_key_of(payload)
        queue = segments.live.get(key >> KEY_SEQ_BITS)
        entry = None if queue is None else queue.get(key)
        if entry is None or entry[:2] != (victim, offset):
            continue  # acked, dropped or written again later
        row = decode_message(payload)
        if row[6] == entry[3]:
            record = [bytes(data[offset : offset + length])]
        else:
            record = list(message_record((*row[:6], entry[3])))
        count = segments.counts.get(key)
        segments.added(key, (segment, position, length, entry[3]))
        parts += record
        position += length
        copied += 1
        if count:
            counted.append((key, count, entry[3]))
            segments.counts[key] = count  # added() cleared it: the C record below restores it at replay
    if counted:
        record_bytes = counts_record(counted)
        parts.append(record_bytes)
        position += len(record_bytes)
    segments.refs[segment].add(victim)  # the copies replace what is there: it must go first
    log.info("message_segment_compacted", segment=victim, messages=copied, into=segment)
    return position
