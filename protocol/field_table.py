"""Linear, bounded decoding of AMQP field tables and arrays (RabbitMQ's type codes, 0-9-1 errata §17).

pamqp's decoder slices the remaining input for every field (``value[offset:]``), so a table of n fields costs
O(n²) time, and nested tables copy their whole tail at each level (a 10,000-deep table: tens of MB). This one
walks one buffer with offsets and an explicit stack: time and memory linear in the input, any nesting depth
without recursion. On valid input it returns exactly what ``pamqp.decode.field_table`` returns (same Python
types: a longstr is ``str`` when UTF-8, else ``bytes``; ``x`` is ``bytearray``; ``T`` an aware datetime), so
re-encoding with pamqp yields the same bytes (tests/property/test_field_table.py).

Unlike pamqp it checks every length against its container, as ``rabbit_binary_parser:parse_table/1`` does by
binary matching (``<<"S", Len:32, V:Len/binary, Rest/binary>>``): a longstr, table or array running past the
table that holds it, a truncated number, or an unknown type code is a `FieldTableError`; the caller turns it
into RabbitMQ's answer for that input.
"""

from __future__ import annotations

import datetime
import decimal
import re
import struct
from itertools import repeat
from typing import Any, Final

__all__ = ["FieldTableError", "decode_array", "decode_table", "decode_table_at", "timestamp_value"]

_U32 = struct.Struct("!I")
_FIXED: Final[dict[int, tuple[struct.Struct, int]]] = {
    ord("b"): (struct.Struct("!b"), 1),
    ord("B"): (struct.Struct("!B"), 1),
    ord("s"): (struct.Struct("!h"), 2),
    ord("u"): (struct.Struct("!H"), 2),
    ord("I"): (struct.Struct("!i"), 4),
    ord("i"): (struct.Struct("!I"), 4),
    ord("l"): (struct.Struct("!q"), 8),
    ord("L"): (struct.Struct("!q"), 8),  # pamqp reads 'L' as signed 64-bit too
    ord("f"): (struct.Struct("!f"), 4),
    ord("d"): (struct.Struct("!d"), 8),
}
_DECIMAL = struct.Struct("!Bi")  # scale, then a signed value (as pamqp)
_TIMESTAMP = struct.Struct("!Q")
# pamqp also reads 0x00 as void; RabbitMQ's parse_table/1 has no clause for it (the oracle drops the
# connection), so it is an unknown type here.
_T_VOID: Final = ord("V")
_NOT_VOID: Final = re.compile(rb"[^V]")
_T_BOOL, _T_LONGSTR, _T_BYTES = ord("t"), ord("S"), ord("x")
_T_TABLE, _T_ARRAY, _T_DECIMAL, _T_TIMESTAMP = ord("F"), ord("A"), ord("D"), ord("T")
_TEN: Final = decimal.Decimal(10)
_UTC: Final = datetime.UTC


class FieldTableError(ValueError):
    """Malformed table or array: ``reason`` says what (``truncated``, ``unknown field type 'Z'``...)."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(f"{reason} at offset {offset}")
        self.reason = reason
        self.offset = offset


def decode_table_at(data: bytes, pos: int, limit: int | None = None) -> tuple[dict[str, Any], int]:
    """The table whose 4-byte length prefix starts at ``data[pos]``; returns it and the offset after it.

    The table must end at or before ``limit`` (default: the end of ``data``)."""
    value, end = _decode_container(data, pos, len(data) if limit is None else limit, True)
    return value, end


def decode_table(raw: bytes) -> dict[str, Any]:
    """A whole length-prefixed table occupying exactly ``raw`` (trailing bytes are an error)."""
    value, end = _decode_container(raw, 0, len(raw), True)
    if end != len(raw):
        raise FieldTableError("trailing bytes after table", end)
    table: dict[str, Any] = value
    return table


def decode_array(raw: bytes) -> list[Any]:
    """A whole length-prefixed array occupying exactly ``raw``."""
    value, end = _decode_container(raw, 0, len(raw), False)
    if end != len(raw):
        raise FieldTableError("trailing bytes after array", end)
    array: list[Any] = value
    return array


def _container_end(data: bytes, pos: int, limit: int) -> int:
    if pos + 4 > limit:
        raise FieldTableError("truncated length", pos)
    end: int = pos + 4 + _U32.unpack_from(data, pos)[0]
    if end > limit:
        raise FieldTableError("length runs past its container", pos)
    return end


def _decode_container(data: bytes, pos: int, limit: int, is_table: bool) -> tuple[Any, int]:
    end = _container_end(data, pos, limit)
    root: Any = {} if is_table else []
    container: Any = root
    in_table = is_table
    pos += 4
    # Open enclosing containers: (value, is_table, end offset). Iterative, so depth costs heap, not C stack;
    # the inner loop runs over one container and touches the stack only to enter or leave a nested one.
    stack: list[tuple[Any, bool, int]] = []
    fixed = _FIXED
    unpack_u32 = _U32.unpack_from
    while True:
        while pos < end:
            key = ""
            if in_table:
                key_end = pos + 1 + data[pos]
                if key_end >= end:  # the key and at least its type octet must fit
                    raise FieldTableError("truncated field", pos)
                key = data[pos + 1 : key_end].decode()
                pos = key_end
            kind = data[pos]
            pos += 1
            value: Any
            if kind == _T_VOID:
                if not in_table:  # a run of voids (cheap to send, so a likely flood): one step
                    other = _NOT_VOID.search(data, pos, end)
                    stop = end if other is None else other.start()
                    container.extend(repeat(None, stop - pos + 1))
                    pos = stop
                    continue
                value = None
            elif kind in (_T_LONGSTR, _T_BYTES):
                if pos + 4 > end:
                    raise FieldTableError("truncated length", pos)
                stop = pos + 4 + unpack_u32(data, pos)[0]
                if stop > end:
                    raise FieldTableError("longstr runs past its container", pos)
                raw = data[pos + 4 : stop]
                if kind == _T_BYTES:
                    value = bytearray(raw)
                else:
                    try:
                        value = raw.decode()
                    except UnicodeDecodeError:
                        value = raw
                pos = stop
            elif kind in (_T_TABLE, _T_ARRAY):
                inner_end = _container_end(data, pos, end)
                value = {} if kind == _T_TABLE else []
                if in_table:
                    container[key] = value
                else:
                    container.append(value)
                stack.append((container, in_table, end))
                container, in_table, end = value, kind == _T_TABLE, inner_end
                pos += 4
                continue
            elif kind == _T_BOOL:
                if pos >= end:
                    raise FieldTableError("truncated value", pos)
                value = data[pos] != 0
                pos += 1
            elif kind == _T_DECIMAL:
                if pos + 5 > end:
                    raise FieldTableError("truncated value", pos)
                scale, raw_value = _DECIMAL.unpack_from(data, pos)
                value = decimal.Decimal(raw_value) * (_TEN**-scale)
                pos += 5
            elif kind == _T_TIMESTAMP:
                if pos + 8 > end:
                    raise FieldTableError("truncated value", pos)
                value = timestamp_value(_TIMESTAMP.unpack_from(data, pos)[0], pos)
                pos += 8
            else:
                spec = fixed.get(kind)
                if spec is None:
                    raise FieldTableError(f"unknown field type {chr(kind)!r}", pos - 1)
                codec, size = spec
                if pos + size > end:
                    raise FieldTableError("truncated value", pos)
                value = codec.unpack_from(data, pos)[0]
                pos += size
            if in_table:
                container[key] = value
            else:
                container.append(value)
        if not stack:
            return root, pos
        container, in_table, end = stack.pop()


def timestamp_value(seconds: float, pos: int) -> datetime.datetime:
    """A ``T`` value or timestamp property as pamqp returns it: an aware UTC datetime."""
    # pamqp: "anything above the year 2106 is likely milliseconds".
    if seconds > 0xFFFFFFFF:
        seconds /= 1000.0
    try:
        return datetime.datetime.fromtimestamp(seconds, tz=_UTC)
    except (OverflowError, ValueError, OSError):
        raise FieldTableError("timestamp out of range", pos) from None
