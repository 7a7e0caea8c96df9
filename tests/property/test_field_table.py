"""protocol.field_table against pamqp: equal on every valid table, byte for byte on re-encode.

Two generators: raw wire bytes over every type code RabbitMQ accepts (compared with ``pamqp.decode``), and
Python values that pamqp encodes (decoded by ours and re-encoded by pamqp to the same bytes). Content-header
properties and method arguments decoded by protocol.codec are compared with pamqp's own unmarshalling.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pamqp import commands
from pamqp import decode as pamqp_decode
from pamqp import encode as pamqp_encode
from pamqp.header import ContentHeader

from protocol.codec import decode_method, decode_properties, encode_method
from protocol.field_table import FieldTableError, decode_array, decode_table

# -- raw wire bytes ---------------------------------------------------------------------------------------

_keys = st.text(max_size=8).map(str.encode)


def _fixed(code: bytes, fmt: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    return values.map(lambda v: code + struct.pack(fmt, v))


_finite32 = st.floats(allow_nan=False, width=32)
_finite64 = st.floats(allow_nan=False)
_scalars: st.SearchStrategy[bytes] = st.one_of(
    _fixed(b"t", "!B", st.integers(0, 255)),
    _fixed(b"b", "!b", st.integers(-128, 127)),
    _fixed(b"B", "!B", st.integers(0, 255)),
    _fixed(b"s", "!h", st.integers(-(2**15), 2**15 - 1)),
    _fixed(b"u", "!H", st.integers(0, 2**16 - 1)),
    _fixed(b"I", "!i", st.integers(-(2**31), 2**31 - 1)),
    _fixed(b"i", "!I", st.integers(0, 2**32 - 1)),
    _fixed(b"l", "!q", st.integers(-(2**63), 2**63 - 1)),
    _fixed(b"L", "!q", st.integers(-(2**63), 2**63 - 1)),
    _fixed(b"f", "!f", _finite32),
    _fixed(b"d", "!d", _finite64),
    st.tuples(st.integers(0, 255), st.integers(-(2**31), 2**31 - 1)).map(
        lambda sv: b"D" + struct.pack("!Bi", *sv)
    ),
    _fixed(b"T", "!Q", st.integers(0, 253402300799)),  # up to year 9999 (both as seconds and as ms)
    st.binary(max_size=40).map(lambda raw: b"S" + struct.pack("!I", len(raw)) + raw),
    st.binary(max_size=40).map(lambda raw: b"x" + struct.pack("!I", len(raw)) + raw),
    st.just(b"V"),
)


def _prefixed(code: bytes, body: bytes) -> bytes:
    return code + struct.pack("!I", len(body)) + body


def _extend(children: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    table = st.lists(st.tuples(_keys, children), max_size=6).map(
        lambda items: b"".join(bytes((len(k),)) + k + v for k, v in items)
    )
    array = st.lists(children, max_size=6).map(b"".join)
    return st.one_of(table.map(lambda b: _prefixed(b"F", b)), array.map(lambda b: _prefixed(b"A", b)))


field_values = st.recursive(_scalars, _extend, max_leaves=30)
raw_tables = st.lists(st.tuples(_keys, field_values), max_size=10).map(
    lambda items: _prefixed(b"", b"".join(bytes((len(k),)) + k + v for k, v in items))
)


@settings(max_examples=400)
@given(raw_tables)
def test_raw_tables_decode_as_pamqp(raw: bytes) -> None:
    assert decode_table(raw) == pamqp_decode.field_table(raw)[1]


@settings(max_examples=200)
@given(st.lists(field_values, max_size=10).map(lambda vs: _prefixed(b"", b"".join(vs))))
def test_raw_arrays_decode_as_pamqp(raw: bytes) -> None:
    assert decode_array(raw) == pamqp_decode.field_array(raw)[1]


# -- Python values through pamqp's encoder ----------------------------------------------------------------

_value_scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-(10**6), max_value=10**6),
    st.text(max_size=30),
    st.datetimes(min_value=datetime.datetime(1970, 1, 2), max_value=datetime.datetime(2100, 1, 1)).map(
        lambda d: d.replace(microsecond=0, tzinfo=datetime.UTC)
    ),
    st.binary(max_size=30).map(bytearray),
    st.none(),
)
python_tables = st.recursive(
    st.dictionaries(st.text(max_size=10).filter(lambda k: len(k.encode()) < 256), _value_scalars, max_size=6),
    lambda children: st.one_of(
        st.dictionaries(st.text(max_size=8), children, max_size=4),
        st.dictionaries(st.text(max_size=8), st.lists(children, max_size=4), max_size=4),
    ),
    max_leaves=25,
)


@settings(max_examples=300)
@given(python_tables)
def test_reencoding_our_decode_gives_the_same_bytes(table: dict[str, Any]) -> None:
    raw = pamqp_encode.field_table(table)
    ours = decode_table(raw)
    assert ours == pamqp_decode.field_table(raw)[1]
    assert pamqp_encode.field_table(ours) == raw


# -- through the codec: method arguments and content-header properties ------------------------------------


@settings(max_examples=150)
@given(python_tables, st.text(max_size=40).filter(lambda n: len(n.encode()) < 256))
def test_queue_declare_arguments_as_pamqp(arguments: dict[str, Any], name: str) -> None:
    method = commands.Queue.Declare.__new__(commands.Queue.Declare)
    for slot in commands.Queue.Declare.__slots__:
        setattr(method, slot, False)
    method.ticket, method.queue, method.arguments = 0, name, arguments
    payload = encode_method(1, method)[7:-1]
    expected = commands.Queue.Declare.__new__(commands.Queue.Declare)
    expected.unmarshal(payload[4:])
    ours = decode_method(payload)
    assert {s: getattr(ours, s) for s in ours.__slots__} == {
        s: getattr(expected, s) for s in expected.__slots__
    }


_shortstr = st.text(max_size=20).filter(lambda s: len(s.encode()) < 256)


@settings(max_examples=200)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "content_type": _shortstr,
            "content_encoding": _shortstr,
            "headers": python_tables,
            "delivery_mode": st.sampled_from([1, 2]),
            "priority": st.integers(0, 255),
            "correlation_id": _shortstr,
            "reply_to": _shortstr,
            "expiration": _shortstr,
            "message_id": _shortstr,
            "timestamp": st.datetimes(
                min_value=datetime.datetime(1970, 1, 2), max_value=datetime.datetime(2100, 1, 1)
            ).map(lambda d: d.replace(microsecond=0, tzinfo=datetime.UTC)),
            "message_type": _shortstr,
            "user_id": _shortstr,
            "app_id": _shortstr,
        },
    ),
    st.integers(0, 2**63),
)
def test_properties_decode_as_pamqp(fields: dict[str, Any], body_size: int) -> None:
    payload = ContentHeader(0, body_size, commands.Basic.Properties(**fields)).marshal()
    expected = ContentHeader()
    expected.unmarshal(payload)
    ours = decode_properties(payload)
    for slot in commands.Basic.Properties.__slots__:
        assert getattr(ours, slot) == getattr(expected.properties, slot), slot


# -- what pamqp accepts and we refuse: lengths past their container, unknown types ------------------------


@given(raw_tables, st.integers(1, 2**16))
def test_a_longstr_running_past_its_table_is_refused(raw: bytes, excess: int) -> None:
    body = raw[4:]
    inner = b"\x01kS" + struct.pack("!I", 3 + excess) + b"abc"
    table = _prefixed(b"", body + inner)
    with pytest.raises(FieldTableError, match="longstr runs past its container"):
        decode_table(table)


@pytest.mark.parametrize("code", [b"Z", b"\x00", b"U"])
def test_unknown_and_nul_types_are_refused(code: bytes) -> None:
    with pytest.raises(FieldTableError, match="unknown field type"):
        decode_table(_prefixed(b"", b"\x01k" + code))


def test_decimal_is_pamqps_value() -> None:
    raw = _prefixed(b"", b"\x01kD" + struct.pack("!Bi", 2, -12345))
    assert decode_table(raw) == {"k": decimal.Decimal("-123.45")}
