"""Rewrite a raw content-header payload: set or remove header-table entries, drop the expiration property.

Used for the few broker-made changes to a message (x-death on dead-lettering, x-delivery-count, BCC removal).
Entries the broker does not touch keep their exact bytes, so a client's field types survive (RabbitMQ keeps
them too); new values get the types RabbitMQ writes: integers as ``l`` (long), strings ``S``, timestamps
``T``, arrays ``A``, tables ``F``. When entries are set, the table comes out sorted by key, as
rabbit_misc:set_table_value leaves it.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from protocol.errors import HardError, ReplyCode

_HEADERS_FLAG = 1 << 13
_EXPIRATION_FLAG = 1 << 8
# Basic property flags from bit 15 down, and how each value is laid out.
_LAYOUT = (
    (15, "s"), (14, "s"), (13, "F"), (12, "o"), (11, "o"), (10, "s"), (9, "s"), (8, "s"), (7, "s"),
    (6, "q"), (5, "s"), (4, "s"), (3, "s"), (2, "s"),
)  # fmt: skip
_FIXED = {
    "t": 1,
    "b": 1,
    "B": 1,
    "s": 2,
    "u": 2,
    "I": 4,
    "i": 4,
    "l": 8,
    "L": 8,
    "f": 4,
    "d": 8,
    "D": 5,
    "T": 8,
}
_SIZED = frozenset("SxAF")


def _bad(payload: bytes) -> HardError:
    return HardError(ReplyCode.FRAME_ERROR, "cannot decode content header", 60, 40)


def _skip_value(data: bytes, pos: int) -> int:
    kind = chr(data[pos])
    pos += 1
    if kind in _FIXED:
        return pos + _FIXED[kind]
    if kind in _SIZED:
        return pos + 4 + int.from_bytes(data[pos : pos + 4], "big")
    if kind == "V":
        return pos
    raise ValueError(f"unknown field type {kind!r}")


def split_table(table: bytes) -> list[tuple[bytes, bytes]]:
    """(key, raw entry bytes) of each entry of a field table body (without its length prefix)."""
    entries = []
    pos = 0
    while pos < len(table):
        start = pos
        key_len = table[pos]
        key = table[pos + 1 : pos + 1 + key_len]
        pos = _skip_value(table, pos + 1 + key_len)
        if pos > len(table):
            raise ValueError("truncated table")
        entries.append((key, table[start:pos]))
    return entries


def encode_value(value: Any) -> bytes:
    """A field value with the type RabbitMQ gives values it writes itself."""
    if isinstance(value, bool):
        return b"t" + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        return b"l" + struct.pack(">q", value)
    if isinstance(value, str):
        raw = value.encode()
        return b"S" + struct.pack(">I", len(raw)) + raw
    if isinstance(value, bytes):
        return b"S" + struct.pack(">I", len(value)) + value
    if isinstance(value, bytearray):
        return b"x" + struct.pack(">I", len(value)) + bytes(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return b"T" + struct.pack(">Q", int(value.timestamp()))
    if isinstance(value, float):
        return b"d" + struct.pack(">d", value)
    if isinstance(value, Decimal):
        sign, digits, exponent = value.as_tuple()
        scale = -int(exponent)
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        return b"D" + struct.pack(">Bi", scale, unscaled)
    if isinstance(value, Mapping):
        body = encode_table(value)
        return b"F" + struct.pack(">I", len(body)) + body
    if isinstance(value, list | tuple):
        body = b"".join(encode_value(item) for item in value)
        return b"A" + struct.pack(">I", len(body)) + body
    if value is None:
        return b"V"
    raise TypeError(f"cannot encode {type(value).__name__} in a field table")


def encode_entry(key: str, value: Any) -> bytes:
    raw_key = key.encode()
    return bytes([len(raw_key)]) + raw_key + encode_value(value)


def encode_table(table: Mapping[str, Any]) -> bytes:
    return b"".join(encode_entry(key, value) for key, value in table.items())


def rewrite_content_header(
    payload: bytes, updates: Mapping[str, Any], remove: Sequence[str], clear_expiration: bool
) -> bytes:
    """The content-header payload with header entries set/removed and, if asked, no expiration property."""
    try:
        return _rewrite(payload, updates, remove, clear_expiration)
    except (IndexError, ValueError, struct.error):
        raise _bad(payload) from None


def _rewrite(
    payload: bytes, updates: Mapping[str, Any], remove: Sequence[str], clear_expiration: bool
) -> bytes:
    (flags,) = struct.unpack_from(">H", payload, 12)
    pos = 14
    fields: dict[int, bytes] = {}
    for bit, kind in _LAYOUT:
        if not flags & (1 << bit):
            continue
        start = pos
        if kind == "s":
            pos += 1 + payload[pos]
        elif kind == "F":
            pos += 4 + int.from_bytes(payload[pos : pos + 4], "big")
        elif kind == "o":
            pos += 1
        else:
            pos += 8
        fields[bit] = payload[start:pos]
    if pos > len(payload):
        raise ValueError("truncated properties")
    if updates or remove:
        raw_table = fields.get(13, b"\x00\x00\x00\x00")[4:]
        dropped = {key.encode() for key in remove} | {key.encode() for key in updates}
        entries = [(key, raw) for key, raw in split_table(raw_table) if key not in dropped]
        if updates:
            entries += [(key.encode(), encode_entry(key, value)) for key, value in updates.items()]
            entries.sort(key=lambda entry: entry[0])
        body = b"".join(raw for _, raw in entries)
        if body or 13 in fields:
            fields[13] = struct.pack(">I", len(body)) + body
            flags |= _HEADERS_FLAG
    if clear_expiration and 8 in fields:
        del fields[8]
        flags &= ~_EXPIRATION_FLAG
    props = b"".join(fields[bit] for bit, _ in _LAYOUT if bit in fields)
    return payload[:12] + struct.pack(">H", flags) + props


_REPLY_TO_BIT = 9


def replace_reply_to(payload: bytes, reply_to: str) -> bytes:
    """The content-header payload with its reply_to property set to ``reply_to`` (direct reply-to)."""
    try:
        (flags,) = struct.unpack_from(">H", payload, 12)
        pos = 14
        for bit, kind in _LAYOUT:
            if bit == _REPLY_TO_BIT:
                break
            if not flags & (1 << bit):
                continue
            if kind == "s":
                pos += 1 + payload[pos]
            elif kind == "F":
                pos += 4 + int.from_bytes(payload[pos : pos + 4], "big")
            elif kind == "o":
                pos += 1
            else:
                pos += 8
        end = pos + 1 + payload[pos] if flags & (1 << _REPLY_TO_BIT) else pos
    except (IndexError, struct.error):
        raise _bad(payload) from None
    raw = reply_to.encode()
    flags |= 1 << _REPLY_TO_BIT
    return payload[:12] + struct.pack(">H", flags) + payload[14:pos] + bytes([len(raw)]) + raw + payload[end:]
