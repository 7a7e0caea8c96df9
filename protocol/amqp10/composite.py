"""Composite types (part 1, 1.4): dataclasses encoded as a described list of their fields, in order.

A composite class is a frozen, keyword-only dataclass whose fields carry their AMQP type (``amqp("uint")``);
a field without a default is mandatory. ``@composite(code, name)`` registers it under its numeric descriptor
(domain 0, e.g. 0x10 for open) and its symbolic one (``amqp:open:list``): a peer may send either.

Encoding follows part 1, 1.4: the fields as a list, every field written, a field left None as null (the
receiver applies the spec's default). The spec lets a sender omit trailing nulls; RabbitMQ 4's
amqp10_framing writes every field of its records (a close without an error is a list of one null, an attach
has its fourteen fields), and so does this encoder, frame for frame. A composite without fields (accepted,
released) is the empty list, list0. Decoding checks each field's type and that every mandatory field is
there, with ``amqp:decode-error`` otherwise; an absent field (omitted or null) is None, not its default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Final, Self, TypeVar

from protocol.amqp10.decode import decode_value
from protocol.amqp10.errors import DecodeError
from protocol.amqp10.types import (
    Array,
    BoundedInt,
    Described,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

_KIND: Final = "amqp10_kind"

_INTEGERS: Final[dict[str, type[BoundedInt]]] = {
    "ubyte": UByte,
    "ushort": UShort,
    "uint": UInt,
    "ulong": ULong,
    "timestamp": Timestamp,
}


def amqp(kind: str, default: Any = dataclasses.MISSING) -> Any:
    """A composite field of AMQP type ``kind``: an integer type (``"uint"``, ...), ``"boolean"``,
    ``"string"``, ``"symbol"``, ``"binary"``, ``"symbols"`` (a multiple symbol: a symbol or an array of them
    on the wire, a tuple here), ``"map"`` (fields, filter sets, annotations), ``"composite"`` (a registered
    composite, or a Described one we do not know) or ``"any"`` (a value of any type, kept as decoded).
    Optional fields pass ``default=None``."""
    return dataclasses.field(default=default, metadata={_KIND: kind})


class CompositeType:
    """Base of the composite dataclasses: encode as a described list, decode from one."""

    DESCRIPTOR: ClassVar[int]
    NAME: ClassVar[str]
    # (attribute, kind, mandatory) in wire order; filled in by @composite.
    WIRE_FIELDS: ClassVar[tuple[tuple[str, str, bool], ...]]

    def to_described(self) -> Described:
        values = [_to_wire(kind, getattr(self, name)) for name, kind, _ in self.WIRE_FIELDS]
        return Described(ULong(self.DESCRIPTOR), values)

    @classmethod
    def from_list(cls, values: Any) -> Self:
        if not isinstance(values, list):
            raise DecodeError(f"{cls.NAME}: a list expected, {type(values).__name__} found")
        if len(values) > len(cls.WIRE_FIELDS):
            raise DecodeError(f"{cls.NAME}: {len(values)} fields, at most {len(cls.WIRE_FIELDS)} defined")
        arguments: dict[str, Any] = {}
        for index, (name, kind, mandatory) in enumerate(cls.WIRE_FIELDS):
            value = values[index] if index < len(values) else None
            if value is None:
                if mandatory:
                    raise DecodeError(f"{cls.NAME}: mandatory field {name.replace('_', '-')} is absent")
                arguments[name] = None
                continue
            arguments[name] = _from_wire(kind, value, cls.NAME, name)
        return cls(**arguments)


_REGISTRY: Final[dict[Any, type[CompositeType]]] = {}
C = TypeVar("C", bound=type[CompositeType])


def composite(code: int, name: str) -> Callable[[C], C]:
    """Register a composite dataclass under descriptor ``code`` (domain 0) and its symbolic ``name``."""

    def register(cls: C) -> C:
        cls.DESCRIPTOR = code
        cls.NAME = name
        cls.WIRE_FIELDS = tuple(
            (f.name, f.metadata[_KIND], f.default is dataclasses.MISSING)
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        )
        _REGISTRY[code] = cls
        _REGISTRY[name] = cls
        return cls

    return register


def from_described(value: Any) -> Any:
    """The registered composite ``value`` describes; any other value as it is."""
    # A descriptor is a ulong or a symbol (part 1, 1.5); anything else describes nothing we know (and may be
    # unhashable, a list inside a described value).
    if type(value) is not Described or not isinstance(value.descriptor, ULong | Symbol):
        return value
    cls = _REGISTRY.get(value.descriptor)
    if cls is None:
        return value
    return cls.from_list(value.value)


def decode_composite(data: bytes | memoryview, pos: int = 0) -> tuple[Any, int]:
    """The composite (or other value) encoded at ``pos``, and the position after it."""
    value, end = decode_value(data, pos)
    return from_described(value), end


def _to_wire(kind: str, value: Any) -> Any:
    if value is None:
        return None
    integer = _INTEGERS.get(kind)
    if integer is not None:
        return integer(value)
    if kind == "symbols":
        return Array("symbol", tuple(Symbol(item) for item in value))
    if kind == "symbol":
        return Symbol(value)
    if kind == "string":
        return str(value)
    if kind == "binary":
        return bytes(value)
    if kind == "boolean":
        return bool(value)
    return value


def _from_wire(kind: str, value: Any, owner: str, name: str) -> Any:
    integer = _INTEGERS.get(kind)
    if integer is not None:
        if isinstance(value, int) and not isinstance(value, bool) and integer.MIN <= value <= integer.MAX:
            return integer(value)
    elif kind == "boolean":
        if isinstance(value, bool):
            return value
    elif kind == "string":
        if type(value) is str:  # a symbol or a char is not a string (RabbitMQ matches {utf8, _})
            return value
    elif kind == "symbol":
        if isinstance(value, Symbol):
            return value
    elif kind == "binary":
        if isinstance(value, bytes):
            return value
    elif kind == "symbols":
        if isinstance(value, Symbol):
            return (value,)
        if isinstance(value, Array) and value.element_type == "symbol" and value.descriptor is None:
            return value.items
    elif kind == "map":
        if isinstance(value, dict):
            return value
    elif kind == "composite":
        if type(value) is Described:
            return from_described(value)
    else:
        return value
    raise DecodeError(f"{owner}: field {name.replace('_', '-')} is not of type {kind}: {value!r}")
