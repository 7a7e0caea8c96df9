"""The AMQP 1.0 type system on the spec's examples and encoding boundaries (part 1, 1.2 and 1.6)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from protocol.amqp10.decode import MAX_DEPTH, decode
from protocol.amqp10.encode import encode
from protocol.amqp10.errors import DECODE_ERROR, DecodeError
from protocol.amqp10.types import (
    Array,
    Byte,
    Char,
    Decimal32,
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
    symbols,
)
from tests.unit.protocol.amqp10_strategies import same


def test_the_specs_described_type_example() -> None:
    # Part 1, 1.2: a URL described by the string "URL".
    encoded = bytes.fromhex("00 a1 03") + b"URL" + bytes.fromhex("a1 1e") + b"http://example.org/hello-world"
    value = decode(encoded)
    assert value == Described("URL", "http://example.org/hello-world")
    assert encode(value) == encoded


@pytest.mark.parametrize(
    ("value", "hex_encoding"),
    [
        (None, "40"),
        (True, "41"),
        (False, "42"),
        (UByte(7), "5007"),
        (UShort(7), "600007"),
        (UInt(0), "43"),
        (UInt(255), "52ff"),
        (UInt(256), "7000000100"),
        (ULong(0), "44"),
        (ULong(255), "53ff"),
        (ULong(256), "800000000000000100"),
        (Byte(-1), "51ff"),
        (Short(-2), "61fffe"),
        (Int(-128), "5480"),
        (Int(128), "7100000080"),
        (-128, "5580"),
        (127, "557f"),
        (128, "810000000000000080"),
        (Float(1.5), "723fc00000"),
        (1.5, "823ff8000000000000"),
        (Decimal32(b"\x01\x02\x03\x04"), "7401020304"),
        (Char("é"), "73000000e9"),
        (Timestamp(-1), "83ffffffffffffffff"),
        (uuid.UUID(int=1), "98" + "00" * 15 + "01"),
        (b"", "a000"),
        (b"x" * 255, "a0ff" + "78" * 255),
        (b"x" * 256, "b000000100" + "78" * 256),
        ("", "a100"),
        ("é", "a102c3a9"),
        (Symbol("a" * 256), "b300000100" + "61" * 256),
        ([], "45"),
        ([None], "c0020140"),
        ({}, "c10100"),
        ({Symbol("k"): 1}, "c10602a3016b5501"),
        (symbols("a", "b"), "e00c02b30000000161" + "0000000162"),
        (Array("null", (None, None)), "e0020240"),
        (Array("boolean", (True, False)), "e004025601" + "00"),
        (Described(ULong(0x24), []), "00532445"),
    ],
)
def test_smallest_encodings(value: Any, hex_encoding: str) -> None:
    encoded = bytes.fromhex(hex_encoding)
    assert encode(value) == encoded
    assert same(decode(encoded), value)


def test_a_list_of_255_elements_or_256_octets_is_a_list32() -> None:
    assert encode([None] * 254)[0] == 0xC0
    assert encode([None] * 255)[0] == 0xD0
    assert encode(["x" * 252])[0] == 0xC0  # count 1 + a1 fc + 252 = 255 octets: the size fits in one
    assert encode(["x" * 253])[0] == 0xD0


@pytest.mark.parametrize(
    ("hex_encoding", "value"),
    [
        ("5601", True),
        ("700000002a", UInt(42)),
        ("d00000000400000000", []),
        ("c00100", []),
        ("d10000000400000000", {}),
        ("e0020243", Array("uint", (UInt(0), UInt(0)))),
        ("e0040253 0102", Array("ulong", (ULong(1), ULong(2)))),
        ("f0000000050000000241", Array("boolean", (True, True))),
        ("e00602a3016101 62", Array("symbol", (Symbol("a"), Symbol("b")))),
        ("e00e0100a30178 d0 00000004 00000000", Array("list", ([],), Symbol("x"))),
        ("00a30e6578616d706c653a73796d626f6c 45", Described(Symbol("example:symbol"), [])),
    ],
)
def test_every_other_encoding_is_read(hex_encoding: str, value: Any) -> None:
    assert same(decode(bytes.fromhex(hex_encoding)), value)


@pytest.mark.parametrize(
    "hex_encoding",
    [
        "",  # nothing
        "01",  # no such format code
        "70000000",  # a uint cut short
        "a105616263",  # a str8 of 5 with 3
        "a102c328",  # invalid UTF-8
        "a301ff",  # a non-ASCII symbol
        "7300110000",  # a char beyond U+10FFFF
        "c0030140",  # list8 size 3 but one null element (1 octet) filled
        "c0020240",  # list8 of two elements, one there
        "c1030140 40",  # a map of one key without its value
        "c10502c00100 40",  # a map keyed by a list (legal AMQP that a dict cannot hold)
        "5602",  # a boolean octet that is neither 0 nor 1
        "e0020270",  # an array of two uints and no octets for them
        "e0030200 40",  # an array whose descriptor has no constructor after it
        "f0ffffffff00000001 40",  # an array32 larger than the data
        "f00000000500ffffff40",  # 16 million null elements in 5 octets of input
        "4040",  # octets after the value
        "00 44",  # a descriptor without a value
    ],
)
def test_what_does_not_parse_is_a_decode_error(hex_encoding: str) -> None:
    with pytest.raises(DecodeError) as raised:
        decode(bytes.fromhex(hex_encoding))
    assert raised.value.condition == DECODE_ERROR


def test_deep_nesting_is_a_decode_error_not_a_recursion_error() -> None:
    nested: Any = []
    for _ in range(MAX_DEPTH + 5):
        nested = [nested]
    with pytest.raises(DecodeError, match="nested deeper"):
        decode(encode(nested))
    described: Any = None
    for _ in range(MAX_DEPTH + 5):
        described = Described(ULong(1), described)
    with pytest.raises(DecodeError, match="nested deeper"):
        decode(encode(described))


def test_typed_integers_refuse_values_out_of_range() -> None:
    with pytest.raises(ValueError, match="out of range"):
        UByte(256)
    with pytest.raises(ValueError, match="out of range"):
        UInt(-1)
    with pytest.raises(OverflowError):
        encode(1 << 63)
    with pytest.raises(TypeError, match=r"no AMQP 1\.0 type"):
        encode(object())


def test_typed_values_compare_as_their_python_values() -> None:
    assert UInt(5) == 5
    assert Symbol("amqp:accepted:list") == "amqp:accepted:list"
    keyed: dict[str, int] = {Symbol("k"): 1}
    assert keyed["k"] == 1
