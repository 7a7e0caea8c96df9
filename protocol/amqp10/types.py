"""Python values for the AMQP 1.0 type system (part 1, "Types"), where Python's own would lose the type.

The plain Python types stand for the AMQP type a peer most often means by them, as Qpid Proton's Python
binding reads them: ``None`` null, ``bool`` boolean, ``int`` long, ``float`` double, ``str`` string, ``bytes``
binary, ``uuid.UUID`` uuid, ``list`` list, ``dict`` map. Every other type has a subclass here that keeps it
(``UInt(5)`` is a uint, ``Symbol("x")`` a symbol), so that decoding and encoding a value gives the same value
and the same type back. The subclasses compare equal to their base values (``UInt(5) == 5``): code that only
wants the number or the text reads them as it would a Python value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Self


class Symbol(str):
    """symbol: ASCII names such as descriptors, error conditions and capabilities (``amqp:decode-error``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Symbol({str.__repr__(self)})"


class Char(str):
    """char: one UTF-32BE code point."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Char({str.__repr__(self)})"


class BoundedInt(int):
    """An integer type of a fixed range: constructing one out of range is a ``ValueError``."""

    __slots__ = ()
    MIN: int = 0
    MAX: int = 0

    def __new__(cls, value: int = 0) -> Self:
        if not cls.MIN <= value <= cls.MAX:
            raise ValueError(f"{value} is out of range for {cls.__name__}")
        return super().__new__(cls, value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self)})"


class UByte(BoundedInt):
    __slots__ = ()
    MAX = 0xFF


class UShort(BoundedInt):
    __slots__ = ()
    MAX = 0xFFFF


class UInt(BoundedInt):
    __slots__ = ()
    MAX = 0xFFFFFFFF


class ULong(BoundedInt):
    __slots__ = ()
    MAX = (1 << 64) - 1


class Byte(BoundedInt):
    __slots__ = ()
    MIN = -(1 << 7)
    MAX = (1 << 7) - 1


class Short(BoundedInt):
    __slots__ = ()
    MIN = -(1 << 15)
    MAX = (1 << 15) - 1


class Int(BoundedInt):
    __slots__ = ()
    MIN = -(1 << 31)
    MAX = (1 << 31) - 1


class Timestamp(BoundedInt):
    """timestamp: milliseconds since the Unix epoch, a signed 64-bit integer."""

    __slots__ = ()
    MIN = -(1 << 63)
    MAX = (1 << 63) - 1


LONG_MIN: Final = -(1 << 63)
LONG_MAX: Final = (1 << 63) - 1


class Float(float):
    """float: IEEE 754 binary32 (a plain ``float`` is a double)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Float({float.__repr__(self)})"


class _RawDecimal(bytes):
    """decimal32/64/128: IEEE 754 decimal floating point, kept as its raw octets (nothing in a broker computes
    with them; RabbitMQ forwards them untouched too)."""

    WIDTH: int = 0

    def __new__(cls, raw: bytes) -> Self:
        if len(raw) != cls.WIDTH:
            raise ValueError(f"{cls.__name__} takes {cls.WIDTH} octets, not {len(raw)}")
        return super().__new__(cls, raw)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({bytes.__repr__(self)})"


class Decimal32(_RawDecimal):
    WIDTH = 4


class Decimal64(_RawDecimal):
    WIDTH = 8


class Decimal128(_RawDecimal):
    WIDTH = 16


@dataclass(frozen=True, slots=True)
class Described:
    """A described type (part 1, 1.2): a descriptor (a symbol or a ulong) and the value it describes."""

    descriptor: Any
    value: Any


# The element types an array may hold, by the name the spec gives them.
ARRAY_TYPES: Final = frozenset(
    {
        "null",
        "boolean",
        "ubyte",
        "ushort",
        "uint",
        "ulong",
        "byte",
        "short",
        "int",
        "long",
        "float",
        "double",
        "decimal32",
        "decimal64",
        "decimal128",
        "char",
        "timestamp",
        "uuid",
        "binary",
        "string",
        "symbol",
        "list",
        "map",
        "array",
    }
)


@dataclass(frozen=True, slots=True)
class Array:
    """array: elements of one type under one constructor (part 1, 1.6.24).

    ``element_type`` names that type (``"symbol"``); ``descriptor``, when not None, makes every element a
    described value with that descriptor, of which ``items`` holds the undescribed values.
    """

    element_type: str
    items: tuple[Any, ...] = ()
    descriptor: Any = None

    def __post_init__(self) -> None:
        if self.element_type not in ARRAY_TYPES:
            raise ValueError(f"no AMQP array of {self.element_type!r}")


def symbols(*names: str) -> Array:
    """An array of symbols, as capabilities and mechanism lists are sent (``multiple="true"`` fields)."""
    return Array("symbol", tuple(Symbol(name) for name in names))
