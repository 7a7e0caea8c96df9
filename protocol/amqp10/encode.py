"""Encode Python values (protocol.amqp10.types) in the AMQP 1.0 type system (part 1, 1.6).

Every value gets the smallest encoding, chosen as RabbitMQ 4's amqp10_binary_generator and Qpid Proton choose
it: uint0/ulong0 for zero, smalluint/smallulong below 256, smallint/smalllong from -128 to 127, the 8-bit-size
forms of binary, string and symbol up to 255 octets, list0 for the empty list, and list8/map8/array8 while
the count is below 255 and the size below 256 octets. Array elements share one constructor, the wide one of
their type (sym32, str32, vbin32, uint, ulong, list32, ...), as both do: an element's size must not depend on
its value.
Booleans outside arrays are ``true``/``false`` (0x41/0x42), inside arrays the one-octet boolean (0x56).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, Final, Protocol, runtime_checkable

from protocol.amqp10 import codes as c
from protocol.amqp10.types import (
    LONG_MAX,
    LONG_MIN,
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

_B = struct.Struct(">B")
_b = struct.Struct(">b")
_H = struct.Struct(">H")
_h = struct.Struct(">h")
_I = struct.Struct(">I")
_i = struct.Struct(">i")
_Q = struct.Struct(">Q")
_q = struct.Struct(">q")
_f = struct.Struct(">f")
_d = struct.Struct(">d")
_SIZE_COUNT_8 = struct.Struct(">BB")
_SIZE_COUNT_32 = struct.Struct(">II")


@runtime_checkable
class Composite(Protocol):
    """A value that encodes as a described type: the performatives, terminus, outcomes and sections."""

    def to_described(self) -> Described: ...


Writer = Callable[[bytearray, Any], None]


def encode(value: Any) -> bytes:
    """The AMQP 1.0 encoding of ``value`` (constructor and data)."""
    out = bytearray()
    write(out, value)
    return bytes(out)


def write(out: bytearray, value: Any) -> None:
    """Append the encoding of ``value`` to ``out``. A value of no AMQP type is a ``TypeError``."""
    writer = _WRITERS.get(type(value))
    if writer is None:
        writer = _writer_for(value)
    writer(out, value)


def _writer_for(value: Any) -> Writer:
    # A subclass of a known type (or a composite class) gets its writer remembered on first use.
    if isinstance(value, Composite):
        _WRITERS[type(value)] = _write_composite
        return _write_composite
    for cls in type(value).__mro__:
        writer = _WRITERS.get(cls)
        if writer is not None:
            _WRITERS[type(value)] = writer
            return writer
    raise TypeError(f"no AMQP 1.0 type for {type(value).__name__}: {value!r}")


def _write_null(out: bytearray, _: Any) -> None:
    out.append(c.NULL)


def _write_bool(out: bytearray, value: bool) -> None:
    out.append(c.TRUE if value else c.FALSE)


def _write_ubyte(out: bytearray, value: int) -> None:
    out += bytes((c.UBYTE, value))


def _write_ushort(out: bytearray, value: int) -> None:
    out.append(c.USHORT)
    out += _H.pack(value)


def _write_uint(out: bytearray, value: int) -> None:
    if value == 0:
        out.append(c.UINT0)
    elif value < 256:
        out += bytes((c.SMALLUINT, value))
    else:
        out.append(c.UINT)
        out += _I.pack(value)


def _write_ulong(out: bytearray, value: int) -> None:
    if value == 0:
        out.append(c.ULONG0)
    elif value < 256:
        out += bytes((c.SMALLULONG, value))
    else:
        out.append(c.ULONG)
        out += _Q.pack(value)


def _write_byte(out: bytearray, value: int) -> None:
    out.append(c.BYTE)
    out += _b.pack(value)


def _write_short(out: bytearray, value: int) -> None:
    out.append(c.SHORT)
    out += _h.pack(value)


def _write_int(out: bytearray, value: int) -> None:
    if -128 <= value <= 127:
        out.append(c.SMALLINT)
        out += _b.pack(value)
    else:
        out.append(c.INT)
        out += _i.pack(value)


def _write_long(out: bytearray, value: int) -> None:
    if -128 <= value <= 127:
        out.append(c.SMALLLONG)
        out += _b.pack(value)
    elif LONG_MIN <= value <= LONG_MAX:
        out.append(c.LONG)
        out += _q.pack(value)
    else:
        raise OverflowError(f"{value} does not fit an AMQP long; wrap it as ULong if it is one")


def _write_timestamp(out: bytearray, value: int) -> None:
    out.append(c.TIMESTAMP)
    out += _q.pack(value)


def _write_float(out: bytearray, value: float) -> None:
    out.append(c.FLOAT)
    out += _f.pack(value)


def _write_double(out: bytearray, value: float) -> None:
    out.append(c.DOUBLE)
    out += _d.pack(value)


def _raw_writer(code: int) -> Writer:
    def write_raw(out: bytearray, value: bytes) -> None:
        out.append(code)
        out += value

    return write_raw


def _write_char(out: bytearray, value: str) -> None:
    out.append(c.CHAR)
    out += value.encode("utf-32-be")


def _write_uuid(out: bytearray, value: uuid.UUID) -> None:
    out.append(c.UUID)
    out += value.bytes


def _variable_writer(code8: int, code32: int, to_bytes: Callable[[Any], bytes]) -> Writer:
    def write_variable(out: bytearray, value: Any) -> None:
        data = to_bytes(value)
        if len(data) <= 255:
            out += bytes((code8, len(data)))
        else:
            out.append(code32)
            out += _I.pack(len(data))
        out += data

    return write_variable


_write_binary = _variable_writer(c.VBIN8, c.VBIN32, bytes)
_write_string = _variable_writer(c.STR8, c.STR32, lambda value: value.encode("utf-8"))
_write_symbol = _variable_writer(c.SYM8, c.SYM32, lambda value: value.encode("ascii"))


def _write_compound(out: bytearray, code8: int, code32: int, count: int, body: bytes | bytearray) -> None:
    # "less than 255 elements and less than 256 octets including the count" (amqp10_binary_generator).
    if count >= 255 or len(body) + 1 >= 256:
        out.append(code32)
        out += _SIZE_COUNT_32.pack(len(body) + 4, count)
    else:
        out.append(code8)
        out += _SIZE_COUNT_8.pack(len(body) + 1, count)
    out += body


def _write_list(out: bytearray, value: list[Any] | tuple[Any, ...]) -> None:
    if not value:
        out.append(c.LIST0)
        return
    body = bytearray()
    for item in value:
        write(body, item)
    _write_compound(out, c.LIST8, c.LIST32, len(value), body)


def _write_map(out: bytearray, value: dict[Any, Any]) -> None:
    body = bytearray()
    for key, item in value.items():
        write(body, key)
        write(body, item)
    _write_compound(out, c.MAP8, c.MAP32, 2 * len(value), body)


def _write_described(out: bytearray, value: Described) -> None:
    out.append(c.DESCRIBED)
    write(out, value.descriptor)
    write(out, value.value)


def _write_composite(out: bytearray, value: Composite) -> None:
    _write_described(out, value.to_described())


def _write_array(out: bytearray, value: Array) -> None:
    body = bytearray()
    if value.descriptor is not None:
        body.append(c.DESCRIBED)
        write(body, value.descriptor)
    body.append(c.ARRAY_ELEMENT_CODES[value.element_type])
    element = _ELEMENT_WRITERS[value.element_type]
    for item in value.items:
        element(body, item)
    _write_compound(out, c.ARRAY8, c.ARRAY32, len(value.items), body)


def _packer(fmt: struct.Struct) -> Writer:
    def write_fixed(out: bytearray, value: Any) -> None:
        out += fmt.pack(value)

    return write_fixed


def _wide_variable(to_bytes: Callable[[Any], bytes]) -> Writer:
    def write_wide(out: bytearray, value: Any) -> None:
        data = to_bytes(value)
        out += _I.pack(len(data))
        out += data

    return write_wide


def _wide_compound(write_full: Writer) -> Writer:
    # The element is written in its 32-bit form without the constructor octet: write it whole, drop the code.
    def write_wide(out: bytearray, value: Any) -> None:
        full = bytearray()
        write_full(full, value)
        if full[0] in (c.LIST32, c.MAP32, c.ARRAY32):
            out += memoryview(full)[1:]
            return
        if full[0] == c.LIST0:
            out += _SIZE_COUNT_32.pack(4, 0)
            return
        size, count = full[1], full[2]
        out += _SIZE_COUNT_32.pack(size + 3, count)
        out += memoryview(full)[3:]

    return write_wide


def _append_raw(out: bytearray, value: bytes) -> None:
    out += value


def _append_char(out: bytearray, value: str) -> None:
    out += value.encode("utf-32-be")


def _append_uuid(out: bytearray, value: uuid.UUID) -> None:
    out += value.bytes


_ELEMENT_WRITERS: Final[dict[str, Writer]] = {
    "null": lambda out, value: None,
    "boolean": lambda out, value: out.append(1 if value else 0),
    "ubyte": _packer(_B),
    "ushort": _packer(_H),
    "uint": _packer(_I),
    "ulong": _packer(_Q),
    "byte": _packer(_b),
    "short": _packer(_h),
    "int": _packer(_i),
    "long": _packer(_q),
    "float": _packer(_f),
    "double": _packer(_d),
    "decimal32": _append_raw,
    "decimal64": _append_raw,
    "decimal128": _append_raw,
    "char": _append_char,
    "timestamp": _packer(_q),
    "uuid": _append_uuid,
    "binary": _wide_variable(bytes),
    "string": _wide_variable(lambda value: value.encode("utf-8")),
    "symbol": _wide_variable(lambda value: value.encode("ascii")),
    "list": _wide_compound(_write_list),
    "map": _wide_compound(_write_map),
    "array": _wide_compound(_write_array),
}

_WRITERS: Final[dict[type, Writer]] = {
    type(None): _write_null,
    bool: _write_bool,
    UByte: _write_ubyte,
    UShort: _write_ushort,
    UInt: _write_uint,
    ULong: _write_ulong,
    Byte: _write_byte,
    Short: _write_short,
    Int: _write_int,
    int: _write_long,
    Timestamp: _write_timestamp,
    Float: _write_float,
    float: _write_double,
    Decimal32: _raw_writer(c.DECIMAL32),
    Decimal64: _raw_writer(c.DECIMAL64),
    Decimal128: _raw_writer(c.DECIMAL128),
    Char: _write_char,
    uuid.UUID: _write_uuid,
    bytes: _write_binary,
    bytearray: _write_binary,
    memoryview: _write_binary,
    Symbol: _write_symbol,
    str: _write_string,
    list: _write_list,
    tuple: _write_list,
    dict: _write_map,
    Described: _write_described,
    Array: _write_array,
}
