"""Decode the AMQP 1.0 type system (part 1, 1.6) into the Python values of protocol.amqp10.types.

Every encoding of every type is read, not only the ones we write: a uint may come as uint0, smalluint or uint,
a list as list0, list8 or list32, an array element under any constructor of its type. What does not parse is a
``DecodeError`` (``amqp:decode-error``), never another exception: a truncated value, a compound whose elements
do not fill its declared size exactly, an odd map count, invalid UTF-8 in a string, a non-ASCII symbol, a
code point out of range, an unknown format code, a map key that Python cannot hash (a list or a map: legal
AMQP, not supported here), or nesting deeper than ``MAX_DEPTH``.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, Final

from protocol.amqp10 import codes as c
from protocol.amqp10.errors import DecodeError
from protocol.amqp10.types import (
    Array,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Int,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

# Compounds and descriptors nest; a peer sending a thousand nested lists gets an error, not a RecursionError.
MAX_DEPTH: Final = 64

# A payload reader: (data, position after the constructor, depth) -> (value, position after the value).
Reader = Callable[[memoryview, int, int], tuple[Any, int]]

_H = struct.Struct(">H")
_h = struct.Struct(">h")
_I = struct.Struct(">I")
_i = struct.Struct(">i")
_Q = struct.Struct(">Q")
_q = struct.Struct(">q")
_f = struct.Struct(">f")
_d = struct.Struct(">d")
_II = struct.Struct(">II")


def decode(data: bytes | memoryview) -> Any:
    """The one value ``data`` encodes; octets left over are a ``DecodeError``."""
    value, end = decode_value(data, 0)
    if end != len(data):
        raise DecodeError(f"{len(data) - end} octets after the value")
    return value


def decode_value(data: bytes | memoryview, pos: int) -> tuple[Any, int]:
    """The value whose constructor starts at ``pos``, and the position after it."""
    return _value(memoryview(data), pos, 0)


def _value(data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
    if pos >= len(data):
        raise DecodeError("value expected, end of data found")
    code = data[pos]
    reader = _READERS[code]
    if reader is None:
        raise DecodeError(f"unknown format code 0x{code:02x}")
    return reader(data, pos + 1, depth)


def _take(data: memoryview, pos: int, size: int) -> int:
    end = pos + size
    if end > len(data):
        raise DecodeError(f"{size} octets expected at {pos}, {max(len(data) - pos, 0)} left")
    return end


def _const(value: Any) -> Reader:
    return lambda data, pos, depth: (value, pos)


def _fixed(fmt: struct.Struct, wrap: Callable[[Any], Any]) -> Reader:
    size = fmt.size
    unpack = fmt.unpack_from

    def read_fixed(data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
        end = _take(data, pos, size)
        return wrap(unpack(data, pos)[0]), end

    return read_fixed


def _small(wrap: Callable[[int], Any], signed: bool) -> Reader:
    def read_small(data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
        _take(data, pos, 1)
        octet = data[pos]
        return wrap(octet - 256 if signed and octet > 127 else octet), pos + 1

    return read_small


def _read_boolean(data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
    _take(data, pos, 1)
    if data[pos] > 1:
        raise DecodeError(f"boolean octet 0x{data[pos]:02x}")
    return data[pos] == 1, pos + 1


def _raw(width: int, wrap: Callable[[memoryview], Any]) -> Reader:
    def read_raw(data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
        end = _take(data, pos, width)
        return wrap(data[pos:end]), end

    return read_raw


def _to_char(raw: memoryview) -> Char:
    point = int.from_bytes(raw, "big")
    if point > 0x10FFFF or 0xD800 <= point <= 0xDFFF:
        raise DecodeError(f"char 0x{point:x} is not a Unicode scalar value")
    return Char(chr(point))


def _to_string(raw: memoryview) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as error:
        raise DecodeError(f"string is not UTF-8: {error.reason}") from None


def _to_symbol(raw: memoryview) -> Symbol:
    try:
        return Symbol(str(raw, "ascii"))
    except UnicodeDecodeError:
        raise DecodeError("symbol is not ASCII") from None


def _variable(wide: bool, wrap: Callable[[memoryview], Any]) -> Reader:
    def read_variable(data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
        if wide:
            start = _take(data, pos, 4)
            size = _I.unpack_from(data, pos)[0]
        else:
            start = _take(data, pos, 1)
            size = data[pos]
        end = _take(data, start, size)
        return wrap(data[start:end]), end

    return read_variable


def _compound_header(data: memoryview, pos: int, wide: bool) -> tuple[int, int, int]:
    """(count, position of the first element, end) of a list, map or array after its constructor."""
    if wide:
        start = _take(data, pos, 8)
        size, count = _II.unpack_from(data, pos)
        if size < 4:
            raise DecodeError(f"compound size {size} cannot hold its 4-octet count")
        end = _take(data, pos + 4, size)
    else:
        start = _take(data, pos, 2)
        size, count = data[pos], data[pos + 1]
        if size < 1:
            raise DecodeError("compound size 0 cannot hold its count")
        end = _take(data, pos + 1, size)
    return count, start, end


def _elements(data: memoryview, pos: int, count: int, end: int, depth: int) -> list[Any]:
    if depth >= MAX_DEPTH:
        raise DecodeError(f"values nested deeper than {MAX_DEPTH}")
    # Each element takes at least its constructor octet: a count beyond that cannot be honest.
    if count > end - pos:
        raise DecodeError(f"{count} elements declared in {end - pos} octets")
    body = data[:end]
    items = []
    for _ in range(count):
        item, pos = _value(body, pos, depth + 1)
        items.append(item)
    if pos != end:
        raise DecodeError(f"compound declared {end - pos} octets more than its elements fill")
    return items


def _list(wide: bool) -> Reader:
    def read_list(data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
        count, start, end = _compound_header(data, pos, wide)
        return _elements(data, start, count, end, depth), end

    return read_list


def _map(wide: bool) -> Reader:
    def read_map(data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
        count, start, end = _compound_header(data, pos, wide)
        if count % 2:
            raise DecodeError(f"map with an odd count ({count})")
        items = _elements(data, start, count, end, depth)
        try:
            return dict(zip(items[::2], items[1::2], strict=True)), end
        except TypeError:
            raise DecodeError("map key of a type that cannot be a dict key (list or map)") from None

    return read_map


def _array(wide: bool) -> Reader:
    def read_array(data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
        count, start, end = _compound_header(data, pos, wide)
        if depth >= MAX_DEPTH:
            raise DecodeError(f"values nested deeper than {MAX_DEPTH}")
        body = data[:end]
        descriptor = None
        _take(body, start, 1)
        if body[start] == c.DESCRIBED:
            descriptor, start = _value(body, start + 1, depth + 1)
            _take(body, start, 1)
        code = body[start]
        element_type = _ARRAY_ELEMENT_TYPES.get(code)
        reader = _READERS[code]
        if element_type is None or reader is None:
            raise DecodeError(f"format code 0x{code:02x} cannot construct array elements")
        pos = start + 1
        # Elements of a zero-width type (null, true, false, uint0, ...) take no octets, so only the count
        # bounds them: at most the octets the buffer holds, or 255 (an array8's count) for a short buffer
        # (Qpid Proton writes an array of 11 nulls in 4 octets); either keeps allocation linear in the input.
        if code in _ZERO_WIDTH and count > max(len(data), 255):
            raise DecodeError(f"{count} zero-width array elements")
        if code not in _ZERO_WIDTH and count > end - pos:
            raise DecodeError(f"{count} array elements declared in {end - pos} octets")
        items = []
        for _ in range(count):
            item, pos = reader(body, pos, depth + 1)
            items.append(item)
        if pos != end:
            raise DecodeError(f"array declared {end - pos} octets more than its elements fill")
        return Array(element_type, tuple(items), descriptor), end

    return read_array


def _read_described(data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
    if depth >= MAX_DEPTH:
        raise DecodeError(f"values nested deeper than {MAX_DEPTH}")
    descriptor, pos = _value(data, pos, depth + 1)
    value, pos = _value(data, pos, depth + 1)
    return Described(descriptor, value), pos


_ZERO_WIDTH: Final = frozenset({c.NULL, c.TRUE, c.FALSE, c.UINT0, c.ULONG0, c.LIST0})

_ARRAY_ELEMENT_TYPES: Final[dict[int, str]] = {
    **{code: name for name, code in c.ARRAY_ELEMENT_CODES.items()},
    c.TRUE: "boolean",
    c.FALSE: "boolean",
    c.UINT0: "uint",
    c.SMALLUINT: "uint",
    c.ULONG0: "ulong",
    c.SMALLULONG: "ulong",
    c.SMALLINT: "int",
    c.SMALLLONG: "long",
    c.VBIN8: "binary",
    c.STR8: "string",
    c.SYM8: "symbol",
    c.LIST0: "list",
    c.LIST8: "list",
    c.MAP8: "map",
    c.ARRAY8: "array",
}

_READERS: Final[list[Reader | None]] = [None] * 256
_READERS[c.DESCRIBED] = _read_described
_READERS[c.NULL] = _const(None)
_READERS[c.TRUE] = _const(True)
_READERS[c.FALSE] = _const(False)
_READERS[c.BOOLEAN] = _read_boolean
_READERS[c.UBYTE] = _small(UByte, signed=False)
_READERS[c.USHORT] = _fixed(_H, UShort)
_READERS[c.UINT] = _fixed(_I, UInt)
_READERS[c.SMALLUINT] = _small(UInt, signed=False)
_READERS[c.UINT0] = _const(UInt(0))
_READERS[c.ULONG] = _fixed(_Q, ULong)
_READERS[c.SMALLULONG] = _small(ULong, signed=False)
_READERS[c.ULONG0] = _const(ULong(0))
_READERS[c.BYTE] = _small(Byte, signed=True)
_READERS[c.SHORT] = _fixed(_h, Short)
_READERS[c.INT] = _fixed(_i, Int)
_READERS[c.SMALLINT] = _small(Int, signed=True)
_READERS[c.LONG] = _fixed(_q, int)
_READERS[c.SMALLLONG] = _small(int, signed=True)
_READERS[c.FLOAT] = _fixed(_f, Float)
_READERS[c.DOUBLE] = _fixed(_d, float)
_READERS[c.DECIMAL32] = _raw(4, lambda raw: Decimal32(bytes(raw)))
_READERS[c.DECIMAL64] = _raw(8, lambda raw: Decimal64(bytes(raw)))
_READERS[c.DECIMAL128] = _raw(16, lambda raw: Decimal128(bytes(raw)))
_READERS[c.CHAR] = _raw(4, _to_char)
_READERS[c.TIMESTAMP] = _fixed(_q, Timestamp)
_READERS[c.UUID] = _raw(16, lambda raw: uuid.UUID(bytes=bytes(raw)))
_READERS[c.VBIN8] = _variable(False, bytes)
_READERS[c.VBIN32] = _variable(True, bytes)
_READERS[c.STR8] = _variable(False, _to_string)
_READERS[c.STR32] = _variable(True, _to_string)
_READERS[c.SYM8] = _variable(False, _to_symbol)
_READERS[c.SYM32] = _variable(True, _to_symbol)
_READERS[c.LIST0] = lambda data, pos, depth: ([], pos)  # a fresh list each time, never a shared one
_READERS[c.LIST8] = _list(wide=False)
_READERS[c.LIST32] = _list(wide=True)
_READERS[c.MAP8] = _map(wide=False)
_READERS[c.MAP32] = _map(wide=True)
_READERS[c.ARRAY8] = _array(wide=False)
_READERS[c.ARRAY32] = _array(wide=True)
