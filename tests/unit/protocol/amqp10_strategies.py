"""Hypothesis strategies for AMQP 1.0 values and performatives, and ``same``: equality that also holds types.

``UInt(5) == 5`` in Python, so a round trip that turned a uint into a long would pass ``==``; ``same``
compares the types too (and floats by their bits, so NaN equals itself).
"""

from __future__ import annotations

import dataclasses
import math
import struct
from typing import Any

from hypothesis import strategies as st

from protocol.amqp10.composite import CompositeType
from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import Accepted, Modified, Received, Rejected, Released
from protocol.amqp10.performatives import Attach, Begin, Close, Detach, Disposition, End, Flow, Open, Transfer
from protocol.amqp10.sasl import SaslChallenge, SaslInit, SaslMechanisms, SaslOutcome, SaslResponse
from protocol.amqp10.terminus import Source, Target
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


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack(">d", a) == struct.pack(">d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, Described):
        return same(a.descriptor, b.descriptor) and same(a.value, b.value)
    if isinstance(a, Array):
        return (
            a.element_type == b.element_type
            and same(a.descriptor, b.descriptor)
            and same(list(a.items), list(b.items))
        )
    if isinstance(a, CompositeType):
        return all(same(getattr(a, name), getattr(b, name)) for name, _, _ in a.WIRE_FIELDS)
    if dataclasses.is_dataclass(a):  # a message section: its fields, so that a NaN inside equals itself
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b)


def bounded(cls: Any) -> st.SearchStrategy[Any]:
    return st.integers(cls.MIN, cls.MAX).map(cls)


texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=300)
ascii_texts = st.text(st.characters(max_codepoint=127), max_size=300)
symbols = ascii_texts.map(Symbol)
short_symbols = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=12).map(
    Symbol
)

# The values of each array element type (and of the same type outside arrays).
ELEMENTS: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "ubyte": bounded(UByte),
    "ushort": bounded(UShort),
    "uint": bounded(UInt) | st.integers(0, 300).map(UInt),
    "ulong": bounded(ULong) | st.integers(0, 300).map(ULong),
    "byte": bounded(Byte),
    "short": bounded(Short),
    "int": bounded(Int) | st.integers(-200, 200).map(Int),
    "long": st.integers(LONG_MIN, LONG_MAX) | st.integers(-200, 200),
    "float": st.floats(width=32).map(Float),
    "double": st.floats(),
    "decimal32": st.binary(min_size=4, max_size=4).map(Decimal32),
    "decimal64": st.binary(min_size=8, max_size=8).map(Decimal64),
    "decimal128": st.binary(min_size=16, max_size=16).map(Decimal128),
    "char": st.characters(exclude_categories=["Cs"]).map(Char),
    "timestamp": bounded(Timestamp),
    "uuid": st.uuids(),
    "binary": st.binary(max_size=300),
    "string": texts,
    "symbol": symbols,
}
scalars = st.one_of(*ELEMENTS.values())
# Map keys: what Python can hash (every scalar); NaN keys aside, whose dict lookups never match.
keys = st.one_of(*(s for name, s in ELEMENTS.items() if name not in ("float", "double")))


@st.composite
def arrays(draw: st.DrawFn, inner: st.SearchStrategy[Any] | None = None) -> Array:
    element_type = draw(st.sampled_from([*ELEMENTS, "list", "map", "array"]))
    if element_type == "list":
        element: st.SearchStrategy[Any] = st.lists(inner if inner is not None else scalars, max_size=3)
    elif element_type == "map":
        element = st.dictionaries(keys, inner if inner is not None else scalars, max_size=3)
    elif element_type == "array":
        element = st.lists(ELEMENTS["uint"], max_size=3).map(lambda items: Array("uint", tuple(items)))
    else:
        element = ELEMENTS[element_type]
    items = draw(st.lists(element, max_size=draw(st.sampled_from([4, 300]))))
    descriptor = draw(st.none() | st.just(Symbol("x:d")) | bounded(ULong))
    return Array(element_type, tuple(items), descriptor)


values: st.SearchStrategy[Any] = st.recursive(
    scalars | arrays(),
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.dictionaries(keys, inner, max_size=6),
        st.builds(Described, st.one_of(bounded(ULong), short_symbols), inner),
        arrays(inner),
    ),
    max_leaves=30,
)

uints = bounded(UInt)
optional_symbols = st.none() | st.lists(short_symbols, max_size=3).map(tuple)
fields: st.SearchStrategy[Any] = st.none() | st.dictionaries(short_symbols, scalars, max_size=3)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


errors = st.builds(Error, condition=short_symbols, description=maybe(texts), info=fields)
outcomes = st.one_of(
    st.builds(Accepted),
    st.builds(Released),
    st.builds(Rejected, error=maybe(errors)),
    st.builds(
        Modified,
        delivery_failed=maybe(st.booleans()),
        undeliverable_here=maybe(st.booleans()),
        message_annotations=fields,
    ),
)
delivery_states = outcomes | st.builds(Received, section_number=uints, section_offset=bounded(ULong))
sources = st.builds(
    Source,
    address=maybe(texts),
    durable=maybe(st.integers(0, 2).map(UInt)),
    expiry_policy=maybe(short_symbols),
    timeout=maybe(uints),
    dynamic=maybe(st.booleans()),
    dynamic_node_properties=fields,
    distribution_mode=maybe(short_symbols),
    filter=maybe(st.dictionaries(short_symbols, st.builds(Described, short_symbols, scalars), max_size=2)),
    default_outcome=maybe(outcomes),
    outcomes=optional_symbols,
    capabilities=optional_symbols,
)
targets = st.builds(
    Target,
    address=maybe(texts),
    durable=maybe(st.integers(0, 2).map(UInt)),
    expiry_policy=maybe(short_symbols),
    timeout=maybe(uints),
    dynamic=maybe(st.booleans()),
    dynamic_node_properties=fields,
    capabilities=optional_symbols,
)


def _optional_fields(cls: type[CompositeType]) -> dict[str, st.SearchStrategy[Any]]:
    by_kind: dict[str, st.SearchStrategy[Any]] = {
        "ubyte": bounded(UByte),
        "ushort": bounded(UShort),
        "uint": uints,
        "ulong": bounded(ULong),
        "boolean": st.booleans(),
        "string": texts,
        "symbol": short_symbols,
        "binary": st.binary(max_size=40),
        "symbols": st.lists(short_symbols, max_size=3).map(tuple),
        "map": st.dictionaries(short_symbols, scalars, max_size=3),
        "timestamp": bounded(Timestamp),
        "any": scalars,
    }
    special = {"source": sources, "target": targets, "state": delivery_states, "error": errors}
    strategies = {}
    for name, kind, mandatory in cls.WIRE_FIELDS:
        strategy = special[name] if name in special else by_kind[kind]
        strategies[name] = strategy if mandatory else maybe(strategy)
    return strategies


def composites(cls: type[CompositeType]) -> st.SearchStrategy[Any]:
    """Instances of a composite class with every field drawn (optional ones sometimes None)."""
    return st.builds(cls, **_optional_fields(cls))


PERFORMATIVES = (Open, Begin, Attach, Flow, Transfer, Disposition, Detach, End, Close)
SASL_FRAMES = (SaslMechanisms, SaslInit, SaslChallenge, SaslResponse, SaslOutcome)
performatives = st.one_of(*(composites(cls) for cls in PERFORMATIVES))
sasl_frames = st.one_of(*(composites(cls) for cls in SASL_FRAMES))
