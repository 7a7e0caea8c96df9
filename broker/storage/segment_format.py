"""The record format of the message segment files (broker.storage.segments): what one record is on disk and
how a file's bytes are read back as records.

A record is a little-endian ``u32 length``, ``u32 CRC-32`` (zlib's, of the ``length`` bytes that follow),
then those bytes: a one-byte kind and its payload.

- ``M`` a message: key (``queue_id << 40 | seq``), expiry (epoch ms), flags (bit 0 delivered, bit 1 has an
  expiry), the lengths of exchange, routing key, content header and body, then those bytes. A later ``M`` of
  the same key replaces the earlier one and its delivery count, as SQLite's ``INSERT OR REPLACE`` does.
- ``D`` delivered marks: keys.
- ``C`` quorum returns: (key, delivery count, delivered mark) each.
- ``A`` acks: runs of consecutive keys (first, last), as the SQLite store deletes them.
- ``Q`` queue deletions: queue ids; every message of the queue written before goes.
- ``T`` the start of a batch that has an SQLite part too: its number, which the same SQLite transaction
  stores (``meta`` ``segment_batch``). A ``T`` whose number SQLite does not have marks a batch whose SQLite
  transaction never committed: recovery cuts the log there, so a batch is all or nothing, as in one database.

A record that does not fit in what is left of the file, or whose CRC does not match, ends the readable part:
a crash mid-append leaves such a tail, and none of it was confirmed (its fdatasync had not returned).
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from broker.storage.base import MessageRow

HEAD = struct.Struct("<II")  # length of what follows, its CRC-32
HEAD_SIZE = HEAD.size
MESSAGE_FIXED = struct.Struct(
    "<BQqBHHII"
)  # kind, key, expires_at, flags, exchange, routing key, header, body
_MESSAGE = MESSAGE_FIXED
_KEY = struct.Struct("<Q")
_RUN = struct.Struct("<QQ")
_COUNT = struct.Struct("<QqB")
MESSAGE, DELIVERED, COUNTED, ACKED, DROPPED, TRANSACTION = b"M", b"D", b"C", b"A", b"Q", b"T"
MESSAGE_KIND = _MESSAGE_KIND = MESSAGE[0]
_FLAG_DELIVERED, FLAG_EXPIRES = 1, 2
_FLAG_EXPIRES = FLAG_EXPIRES
# Exchange and routing key names are AMQP short strings; surrogatepass writes any str the broker holds and
# reads it back unchanged.
_TEXT = "surrogatepass"

SEGMENT_SUFFIX = ".seg"
_IOV_MAX = os.sysconf("SC_IOV_MAX")  # the parts one writev takes (1024 on Linux)

_crc32 = zlib.crc32
# Reading records back (recovery): the C module's CRC-32 where built, three times zlib's speed here (it folds
# by carry-less multiplication; the same value, tests/unit/storage/test_segment_packer.py holds them equal).
_crc32_read: _Checksum = zlib.crc32
_pack_head = HEAD.pack
_pack_message = _MESSAGE.pack


def segment_name(number: int) -> str:
    return f"{number:016d}{SEGMENT_SUFFIX}"


def message_record(row: MessageRow) -> tuple[bytes, bytes]:
    """A message row as a record: (head, payload), to be written one after the other."""
    key, exchange, routing_key, header, body, expires_at, delivered = row
    exchange_bytes = exchange.encode("utf-8", _TEXT)
    routing_bytes = routing_key.encode("utf-8", _TEXT)
    if expires_at is None:
        fixed = _pack_message(
            _MESSAGE_KIND, key, 0, delivered, len(exchange_bytes), len(routing_bytes), len(header), len(body)
        )
    else:
        fixed = _pack_message(
            _MESSAGE_KIND,
            key,
            expires_at,
            delivered | _FLAG_EXPIRES,
            len(exchange_bytes),
            len(routing_bytes),
            len(header),
            len(body),
        )
    payload = b"".join((fixed, exchange_bytes, routing_bytes, header, body))
    return _pack_head(len(payload), _crc32(payload)), payload


def pack_messages_py(rows: list[MessageRow]) -> bytes:
    """The ``M`` records of ``rows`` one after the other: what the C writer (broker/storage/_segment.c) packs,
    in Python."""
    parts: list[bytes] = []
    append, join, crc32, pack_head = parts.append, b"".join, _crc32, _pack_head
    for key, exchange, routing_key, header, body, expires_at, delivered in rows:
        exchange_bytes = exchange.encode()
        routing_bytes = routing_key.encode()
        fixed = _pack_message(
            _MESSAGE_KIND,
            key,
            0 if expires_at is None else expires_at,
            delivered if expires_at is None else delivered | _FLAG_EXPIRES,
            len(exchange_bytes),
            len(routing_bytes),
            len(header),
            len(body),
        )
        payload = join((fixed, exchange_bytes, routing_bytes, header, body))
        append(pack_head(len(payload), crc32(payload)))
        append(payload)
    return join(parts)


def record_lengths_py(rows: list[MessageRow]) -> list[int]:
    """Each row's record length with its head, as pack_messages_py packs it."""
    fixed = HEAD_SIZE + _MESSAGE.size
    return [
        fixed + len(exchange.encode()) + len(routing_key.encode()) + len(header) + len(body)
        for _, exchange, routing_key, header, body, _, _ in rows
    ]


# A part of one append: a record's bytes, or message rows, written as their packed ``M`` records.
Part = bytes | list[MessageRow]


def write_records_py(fd: int, parts: list[Part], sync: bool) -> int:
    """Appends ``parts`` in order at ``fd`` and, if ``sync``, fdatasyncs: what the C writer
    (broker/storage/_segment.c) does, in Python. Returns the bytes written."""
    data = [pack_messages_py(part) if isinstance(part, list) else part for part in parts]
    total = sum(map(len, data))
    # writev: the records as they are, no joined copy of them; a short write, or more parts than an iovec
    # takes, writes the rest joined.
    written = os.writev(fd, data) if len(data) <= _IOV_MAX else 0
    if written < total:
        view = memoryview(b"".join(data))
        while written < total:
            written += os.write(fd, view[written:])
    if sync:
        os.fdatasync(fd)
    return total


_Lengths = Callable[[list[MessageRow]], list[int]]
_Writer = Callable[[int, list[Part], bool], int]
_Checksum = Callable[[memoryview, int], int]


def _native() -> tuple[_Lengths, _Writer, _Checksum] | None:
    """broker.storage._segment, or None: not built, or the pure variant asked for (``WARRENMQ_PURE`` runs
    every native part as Python; ``WARRENMQ_SEGMENT_NATIVE=0`` this one alone, for measuring it)."""
    if (
        os.environ.get("WARRENMQ_PURE", "") not in ("", "0")
        or os.environ.get("WARRENMQ_SEGMENT_NATIVE") == "0"
    ):
        return None
    try:
        from broker.storage import _segment
    except ImportError:
        return None
    if _MESSAGE.format != _segment.FIXED_FORMAT:  # built from another version of the format: not used
        return None
    return _segment.record_lengths, _segment.write_records, _segment.crc32


def _record_lengths(rows: list[MessageRow]) -> list[int]:
    try:
        return _record_lengths_c(rows)
    except (TypeError, ValueError, OverflowError):  # a row the C packer does not take: as Python does
        return record_lengths_py(rows)


def _write_records(fd: int, parts: list[Part], sync: bool) -> int:
    try:
        return _write_records_c(fd, parts, sync)
    except (TypeError, ValueError, OverflowError):  # refused before writing anything: Python packs it
        return write_records_py(fd, parts, sync)


_NATIVE = _native()
if _NATIVE is None:
    record_lengths, write_records = record_lengths_py, write_records_py
else:
    _record_lengths_c, _write_records_c, _crc32_read = _NATIVE
    record_lengths, write_records = _record_lengths, _write_records


def _record(kind: bytes, payload: bytes) -> bytes:
    body = kind + payload
    return _pack_head(len(body), _crc32(body)) + body


def keys_record(kind: bytes, keys: list[int]) -> bytes:
    """A ``D`` (delivered) or ``Q`` (dropped queues) record."""
    return _record(kind, struct.pack(f"<{len(keys)}Q", *keys))


def transaction_record(number: int) -> bytes:
    return _record(TRANSACTION, _KEY.pack(number))


def runs_record(runs: list[tuple[int, int]]) -> bytes:
    """An ``A`` record: acked keys as (first, last) runs."""
    return _record(ACKED, b"".join([_RUN.pack(first, last) for first, last in runs]))


def counts_record(counts: list[tuple[int, int, int]]) -> bytes:
    """A ``C`` record: (key, delivery count, delivered) each."""
    return _record(COUNTED, b"".join([_COUNT.pack(*entry) for entry in counts]))


def decode_message(payload: memoryview | bytes) -> MessageRow:
    """The row of an ``M`` payload (kind byte included), as the SQLite store would return it."""
    _, key, expires_at, flags, exchange_n, routing_n, header_n, body_n = _MESSAGE.unpack_from(payload)
    at = _MESSAGE.size
    exchange = bytes(payload[at : at + exchange_n]).decode("utf-8", _TEXT)
    at += exchange_n
    routing_key = bytes(payload[at : at + routing_n]).decode("utf-8", _TEXT)
    at += routing_n
    header = bytes(payload[at : at + header_n])
    at += header_n
    body = bytes(payload[at : at + body_n])
    expires = expires_at if flags & _FLAG_EXPIRES else None
    return key, exchange, routing_key, header, body, expires, flags & _FLAG_DELIVERED


def read_message(data: bytes, at: int, delivered: int) -> MessageRow:
    """The row of the ``M`` payload at ``at`` in a segment's bytes, with the delivered mark the index holds
    (start-up reads every stored message through this: slices of the file's bytes, no view between)."""
    _, key, expires_at, flags, exchange_n, routing_n, header_n, body_n = _MESSAGE.unpack_from(data, at)
    exchange_at = at + _MESSAGE.size
    routing_at = exchange_at + exchange_n
    header_at = routing_at + routing_n
    body_at = header_at + header_n
    return (
        key,
        data[exchange_at:routing_at].decode("utf-8", _TEXT),
        data[routing_at:header_at].decode("utf-8", _TEXT),
        data[header_at:body_at],
        data[body_at : body_at + body_n],
        expires_at if flags & _FLAG_EXPIRES else None,
        delivered,
    )


def message_key_of(payload: memoryview | bytes) -> int:
    return int(_KEY.unpack_from(payload, 1)[0])


def decode_keys(payload: memoryview | bytes) -> list[int]:
    return [key for (key,) in _KEY.iter_unpack(payload[1:])]


def decode_runs(payload: memoryview | bytes) -> list[tuple[int, int]]:
    return list(_RUN.iter_unpack(payload[1:]))


def decode_counts(payload: memoryview | bytes) -> list[tuple[int, int, int]]:
    return list(_COUNT.iter_unpack(payload[1:]))


def records(data: memoryview) -> Iterator[tuple[int, int, memoryview]]:
    """(offset, record length with its head, payload) of each intact record from the start of ``data``; stops
    at the first torn or corrupt one (`readable_end` says where)."""
    end = len(data)
    at = 0
    head = HEAD.size
    while at + head <= end:
        length, crc = HEAD.unpack_from(data, at)
        stop = at + head + length
        if length == 0 or stop > end:
            return
        payload = data[at + head : stop]
        if _crc32_read(payload, 0) != crc:
            return
        yield at, head + length, payload
        at = stop


def readable_end(data: memoryview) -> int:
    """Where the intact records of ``data`` end."""
    end = 0
    for at, length, _ in records(data):
        end = at + length
    return end


def fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
