"""Differential: our AMQP 1.0 codec against Qpid Proton's (python-qpid-proton's ``Data``, on Proton-C).

Both directions for every value and performative the strategies draw: Proton decodes what we encode to the
same value, we decode what Proton encodes to the same value. Byte for byte where both choose one encoding:
every scalar, and arrays, lists and maps in their 32-bit forms. Where the choices differ, by design: Proton
always writes list32, map32 and array32 (an empty list as list0), RabbitMQ 4 and we write list8, map8 and
array8 while they fit; there both sides must still decode each other's octets to the same value.

Two shapes python-qpid-proton 0.40 cannot carry are left out (``proton_can_hold``): a described value
whose value is itself described (legal, part 1 1.5 ``constructor = %x00 descriptor constructor``; Proton
writes it as we do but reads it back with one descriptor lost), and a map with a binary key (its
``get_dict`` makes the key an unhashable memoryview).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import assume, given, settings

from protocol.amqp10.composite import CompositeType
from protocol.amqp10.decode import decode
from protocol.amqp10.encode import encode
from protocol.amqp10.performatives import decode_performative
from protocol.amqp10.sasl import decode_sasl
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
from tests.unit.protocol.amqp10_strategies import performatives, same, sasl_frames, scalars, values

proton = pytest.importorskip("proton", reason="python-qpid-proton (the dev extra) is not installed")

_PROTON_TYPES: dict[str, int] = {
    "null": proton.Data.NULL,
    "boolean": proton.Data.BOOL,
    "ubyte": proton.Data.UBYTE,
    "ushort": proton.Data.USHORT,
    "uint": proton.Data.UINT,
    "ulong": proton.Data.ULONG,
    "byte": proton.Data.BYTE,
    "short": proton.Data.SHORT,
    "int": proton.Data.INT,
    "long": proton.Data.LONG,
    "float": proton.Data.FLOAT,
    "double": proton.Data.DOUBLE,
    "decimal32": proton.Data.DECIMAL32,
    "decimal64": proton.Data.DECIMAL64,
    "decimal128": proton.Data.DECIMAL128,
    "char": proton.Data.CHAR,
    "timestamp": proton.Data.TIMESTAMP,
    "uuid": proton.Data.UUID,
    "binary": proton.Data.BINARY,
    "string": proton.Data.STRING,
    "symbol": proton.Data.SYMBOL,
    "list": proton.Data.LIST,
    "map": proton.Data.MAP,
    "array": proton.Data.ARRAY,
}
_OUR_TYPES = {code: name for name, code in _PROTON_TYPES.items()}

_TO_PROTON: list[tuple[type, Any]] = [
    (Symbol, proton.symbol),
    (Char, proton.char),
    (UByte, proton.ubyte),
    (UShort, proton.ushort),
    (UInt, proton.uint),
    (ULong, proton.ulong),
    (Byte, proton.byte),
    (Short, proton.short),
    (Int, proton.int32),
    (Timestamp, proton.timestamp),
    (Float, proton.float32),
    (Decimal32, lambda v: proton.decimal32(int.from_bytes(v, "big"))),
    (Decimal64, lambda v: proton.decimal64(int.from_bytes(v, "big"))),
    (Decimal128, lambda v: proton.decimal128(bytes(v))),
]


def to_proton(value: Any) -> Any:
    """Our value as python-qpid-proton's types spell it."""
    if isinstance(value, Described):
        return proton.Described(to_proton(value.descriptor), to_proton(value.value))
    if isinstance(value, Array):
        descriptor = proton.UNDESCRIBED if value.descriptor is None else to_proton(value.descriptor)
        return proton.Array(descriptor, _PROTON_TYPES[value.element_type], *map(to_proton, value.items))
    if isinstance(value, list):
        return [to_proton(item) for item in value]
    if isinstance(value, dict):
        return {to_proton(k): to_proton(v) for k, v in value.items()}
    for ours, theirs in _TO_PROTON:
        if isinstance(value, ours):
            return theirs(value)
    return value


_FROM_PROTON: list[tuple[Any, Any]] = [
    (proton.symbol, Symbol),
    (proton.char, Char),
    (proton.ubyte, UByte),
    (proton.ushort, UShort),
    (proton.uint, UInt),
    (proton.ulong, ULong),
    (proton.byte, Byte),
    (proton.short, Short),
    (proton.int32, Int),
    (proton.timestamp, Timestamp),
    (proton.float32, Float),
    (proton.decimal32, lambda v: Decimal32(int(v).to_bytes(4, "big"))),
    (proton.decimal64, lambda v: Decimal64(int(v).to_bytes(8, "big"))),
    (proton.decimal128, lambda v: Decimal128(bytes(v))),
    (memoryview, bytes),
]


def from_proton(value: Any, element_type: str | None = None) -> Any:
    """Proton's value as ours; inside an array, by the array's element type (Proton reads plain ints)."""
    if isinstance(value, proton.Described):
        return Described(from_proton(value.descriptor), from_proton(value.value))
    if isinstance(value, proton.Array):
        name = _OUR_TYPES[value.type]
        descriptor = None if value.descriptor is proton.UNDESCRIBED else from_proton(value.descriptor)
        return Array(name, tuple(from_proton(item, name) for item in value.elements), descriptor)
    if isinstance(value, list):
        return [from_proton(item) for item in value]
    if isinstance(value, dict):
        return {from_proton(k): from_proton(v) for k, v in value.items()}
    for theirs, ours in _FROM_PROTON:
        if isinstance(value, theirs):
            return ours(value)
    if element_type is not None and value is not None:
        return from_proton(to_proton_element(value, element_type))
    return value


def to_proton_element(value: Any, element_type: str) -> Any:
    wrap = {
        "ubyte": proton.ubyte,
        "ushort": proton.ushort,
        "uint": proton.uint,
        "ulong": proton.ulong,
        "byte": proton.byte,
        "short": proton.short,
        "int": proton.int32,
        "timestamp": proton.timestamp,
        "float": proton.float32,
        "char": proton.char,
        "symbol": proton.symbol,
    }.get(element_type)
    return wrap(value) if wrap is not None and not isinstance(value, wrap) else value


def proton_encode(value: Any) -> bytes:
    data = proton.Data()
    data.put_object(to_proton(value))
    return bytes(data.encode())


def proton_decode(encoded: bytes) -> Any:
    data = proton.Data()
    assert data.decode(encoded) == len(encoded)
    data.rewind()
    data.next()
    return from_proton(data.get_object())


def wire_form(value: Any) -> Any:
    """``value`` with every composite in it (performative, outcome, terminus) as the Described it is."""
    if isinstance(value, CompositeType):
        value = value.to_described()
    if isinstance(value, Described):
        return Described(wire_form(value.descriptor), wire_form(value.value))
    if isinstance(value, list):
        return [wire_form(item) for item in value]
    if isinstance(value, dict):
        return {wire_form(k): wire_form(v) for k, v in value.items()}
    return value


def proton_can_hold(value: Any) -> bool:
    if isinstance(value, Described):
        return not isinstance(value.value, Described) and proton_can_hold(value.value)
    if isinstance(value, Array):
        return all(map(proton_can_hold, value.items))
    if isinstance(value, list):
        return all(map(proton_can_hold, value))
    if isinstance(value, dict):
        return all(not isinstance(k, bytes) and proton_can_hold(v) for k, v in value.items())
    return True


@settings(max_examples=500, deadline=None)
@given(scalars)
def test_scalars_encode_byte_for_byte_as_proton_does(value: Any) -> None:
    assert encode(value) == proton_encode(value)


@settings(max_examples=400, deadline=None)
@given(values)
def test_proton_reads_what_we_write_and_we_read_what_proton_writes(value: Any) -> None:
    assume(proton_can_hold(value))
    assert same(proton_decode(encode(value)), value)
    theirs = proton_encode(value)
    assert same(decode(theirs), value)
    # The same value, however Proton sized its compounds, encodes to our one choice of octets.
    assert encode(decode(theirs)) == encode(value)


@settings(max_examples=300, deadline=None)
@given(performatives)
def test_performatives_agree_with_proton(performative: Any) -> None:
    described = wire_form(performative)
    assume(proton_can_hold(described))
    assert same(proton_decode(encode(performative)), described)
    decoded, payload = decode_performative(proton_encode(described))
    assert same(decoded, performative)
    assert payload == b""


@settings(max_examples=200, deadline=None)
@given(sasl_frames)
def test_sasl_frames_agree_with_proton(frame: Any) -> None:
    described = wire_form(frame)
    assert same(proton_decode(encode(frame)), described)
    assert same(decode_sasl(proton_encode(described)), frame)


def test_wide_compounds_are_byte_for_byte_too() -> None:
    # 300 elements: both write list32, map32 and array32.
    big_list = [UInt(i) for i in range(300)]
    big_map = {Symbol(f"k{i}"): i for i in range(200)}
    big_array = Array("symbol", tuple(Symbol(f"s{i}") for i in range(300)))
    nested = [uuid.UUID(int=7), big_array, Described(ULong(0x77), "x" * 300)] * 100
    for value in (big_list, big_map, big_array, nested):
        assert encode(value) == proton_encode(value)
