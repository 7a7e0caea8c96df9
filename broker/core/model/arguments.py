"""Argument tables as RabbitMQ sees them: frozen identity forms, AMQP type names and Erlang-style rendering.

The session decodes field tables with pamqp, so core only sees Python values: ``str`` (longstr; a longstr
that is not UTF-8 arrives as ``bytes``), ``bytearray`` (binary, ``x``), ``bool``, ``int`` (any width),
``float``, ``Decimal``, ``datetime`` (timestamp), ``dict`` (table), ``list`` (array) and ``None`` (void).
The integer width and float precision a client chose are lost in decoding; where RabbitMQ prints a type
name we report the one pika, py-amqp and the Java client send for that value (``signedint`` inside 32 bits,
else ``long``; ``double``).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Hashable, Mapping
from decimal import Decimal
from typing import Any

FrozenValue = Hashable
FrozenTable = tuple[tuple[str, FrozenValue], ...]

EMPTY_TABLE: FrozenTable = ()

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


class Long(int):
    """An integer whose AMQP type is ``long`` whatever its size. RabbitMQ's management types every JSON
    integer so (rabbit_misc:to_amqp_table), and the type is part of a binding's identity and of its
    ``properties_key`` hash; a plain ``int`` is what a client sent, typed as pika and py-amqp send it."""

    __slots__ = ()


# --- frozen (hashable, reversible) forms: binding identity ---


def freeze_table(table: Mapping[str, Any] | None) -> FrozenTable:
    """A hashable form of an arguments table; equal tables (same keys, same typed values) freeze equal.

    RabbitMQ sorts a binding's top-level arguments by key before comparing bindings
    (rabbit_binding:binding_action -> rabbit_misc:sort_field_table), so key order does not matter here;
    nested tables keep their order, as RabbitMQ compares them as lists. Values are tagged by type so
    ``True``, ``1`` and ``1.0`` (equal in Python) stay distinct, as their AMQP field types are.
    """
    if not table:
        return EMPTY_TABLE
    return tuple(sorted((str(k), freeze_value(v)) for k, v in table.items()))


# A table or array nested deeper than this freezes flat (``("Z", tokens)``): RabbitMQ accepts tables nested
# thousands of levels deep, and nested tuples that deep would exhaust Python's recursion when frozen, hashed
# or compared. The depth is the value's own, so equal values always freeze to the same form.
FLAT_DEPTH = 32


def freeze_value(value: Any) -> FrozenValue:
    """Tag ``value`` with its type and make it hashable; `thaw_value` inverts it."""
    if isinstance(value, Mapping | list | tuple) and deeper_than(value, FLAT_DEPTH):
        return ("Z", _flatten(value))
    if value is None:
        return ("V",)
    if isinstance(value, bool):
        return ("t", value)
    if isinstance(value, int):
        return ("l", int(value)) if type(value) is Long else ("I", value)
    if isinstance(value, float):
        return ("d", "nan") if math.isnan(value) else ("d", value)
    if isinstance(value, str):
        return ("S", value)
    if isinstance(value, bytearray | memoryview):
        return ("x", bytes(value))
    if isinstance(value, bytes):
        return ("s", value)
    if isinstance(value, Decimal):
        return ("D", str(value))  # str() keeps the exponent: Decimal("1.50") and Decimal("1.5") differ
    if isinstance(value, datetime.datetime):
        return ("T", value)
    if isinstance(value, Mapping):
        return ("F", tuple((str(k), freeze_value(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("A", tuple(freeze_value(v) for v in value))
    if isinstance(value, Hashable):
        return ("?", value)
    return ("r", repr(value))


def deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` deep (an explicit stack, no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > limit:
            return True
        children = container.values() if isinstance(container, Mapping) else container
        stack.extend((child, depth + 1) for child in children if isinstance(child, Mapping | list | tuple))
    return False


def _flatten(value: Any) -> tuple[FrozenValue, ...]:
    """Prefix tokens of a container: ``("F", n)`` then n (key, value...) or ``("A", n)`` then n values;
    scalars frozen as usual. Flat, so hashing and comparing it recurse no deeper than a scalar."""
    tokens: list[FrozenValue] = []
    pending: list[Any] = [value]  # what is left to write, last first; a _Key is a key to write as is
    while pending:
        item = pending.pop()
        if isinstance(item, _Key):
            tokens.append(item.key)
        elif isinstance(item, Mapping):
            tokens.append(("F", len(item)))
            for key, child in reversed(list(item.items())):
                pending.append(child)
                pending.append(_Key(str(key)))
        elif isinstance(item, list | tuple):
            tokens.append(("A", len(item)))
            pending.extend(reversed(item))
        else:
            tokens.append(freeze_value(item))
    return tuple(tokens)


class _Key:
    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key


def _unflatten(tokens: tuple[Any, ...]) -> Any:
    """The value `_flatten` wrote, rebuilt with an explicit stack."""
    position = 0
    root: list[Any] = []
    # Open containers: [container, entries still expected]; the root holds the one top value.
    stack: list[list[Any]] = [[root, 1]]
    while stack:
        frame = stack[-1]
        if frame[1] == 0:
            stack.pop()
            continue
        frame[1] -= 1
        container = frame[0]
        key = None
        if isinstance(container, dict):
            key = tokens[position]
            position += 1
        token = tokens[position]
        position += 1
        value: Any
        if token[0] == "F" and isinstance(token[1], int):
            value = {}
            stack.append([value, token[1]])
        elif token[0] == "A" and isinstance(token[1], int):
            value = []
            stack.append([value, token[1]])
        else:
            value = thaw_value(token)
        if key is not None:
            container[key] = value
        else:
            container.append(value)
    return root[0]


def thaw_table(frozen: FrozenTable) -> dict[str, Any]:
    """The plain ``dict`` an arguments table was frozen from (key order: sorted)."""
    return {k: thaw_value(v) for k, v in frozen}


def thaw_value(frozen: Any) -> Any:
    tag = frozen[0]
    if tag == "V":
        return None
    if tag == "l":
        return Long(frozen[1])
    if tag == "Z":
        return _unflatten(frozen[1])
    if tag == "d" and frozen[1] == "nan":
        return math.nan
    if tag == "x":
        return bytearray(frozen[1])
    if tag == "D":
        return Decimal(frozen[1])
    if tag == "F":
        return {k: thaw_value(v) for k, v in frozen[1]}
    if tag == "A":
        return [thaw_value(v) for v in frozen[1]]
    return frozen[1]


# --- AMQP field type names, as RabbitMQ prints them ---


def amqp_type_name(value: Any) -> str:
    """The rabbit_binary_parser type atom RabbitMQ would have decoded ``value`` as (see module docstring)."""
    if value is None:
        return "void"
    if isinstance(value, bool):
        return "bool"
    if type(value) is Long:
        return "long"
    if isinstance(value, int):
        return "signedint" if _INT32_MIN <= value <= _INT32_MAX else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str | bytes):
        return "longstr"
    if isinstance(value, bytearray | memoryview):
        return "binary"
    if isinstance(value, Decimal):
        return "decimal"
    if isinstance(value, datetime.datetime):
        return "timestamp"
    if isinstance(value, Mapping):
        return "table"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def is_amqp_string(value: Any) -> bool:
    """True for a longstr value (``str``, or ``bytes`` when the longstr was not UTF-8)."""
    return isinstance(value, str | bytes)


def as_text(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


# --- Erlang term rendering (io_lib ~p / ~tp) of decoded AMQP values ---


def erlang_term(value: Any) -> str:
    """How RabbitMQ's ``~p``/``~tp`` prints the Erlang value of a field: ``5``, ``true``, ``<<"foo">>``,
    ``[{signedint,1},{longstr,<<"a">>}]`` (array), ``[{<<"k">>,longstr,<<"v">>}]`` (table),
    ``undefined`` (void).
    """
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return erlang_float(value)
    if isinstance(value, str):
        return erlang_binary(value.encode("utf-8"))
    if isinstance(value, bytes | bytearray | memoryview):
        return erlang_binary(bytes(value))
    if isinstance(value, Decimal):
        sign, digits, exponent = value.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        scale = -exponent if isinstance(exponent, int) else 0
        return f"{{{scale},{unscaled}}}"
    if isinstance(value, datetime.datetime):
        return str(timestamp_seconds(value))
    if isinstance(value, Mapping):
        rows = (
            f"{{{erlang_binary(str(k).encode())},{amqp_type_name(v)},{erlang_term(v)}}}"
            for k, v in value.items()
        )
        return "[" + ",".join(rows) + "]"
    if isinstance(value, list | tuple):
        return "[" + ",".join(f"{{{amqp_type_name(v)},{erlang_term(v)}}}" for v in value) + "]"
    return repr(value)


def erlang_binary(data: bytes) -> str:
    """``<<"text">>`` when the bytes are printable UTF-8 (as RabbitMQ 3.10 printed ``<<"héllo">>``), else
    ``<<1,255>>``; ``"`` and ``\\`` are escaped as Erlang does."""
    if not data:
        return "<<>>"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and all(_printable(c) for c in text):
        escaped = "".join(_ESCAPES.get(c, c) for c in text)
        return f'<<"{escaped}">>'
    return "<<" + ",".join(str(b) for b in data) + ">>"


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", "\b": "\\b",
            "\f": "\\f", "\x1b": "\\e"}  # fmt: skip


def _printable(c: str) -> bool:
    return c in _ESCAPES or (" " <= c <= "~") or ord(c) >= 0xA0


def erlang_float(value: float) -> str:
    """Erlang's shortest round-trip float text: ``1.5``, ``1.0e16`` (never ``1e+16``)."""
    if math.isnan(value) or math.isinf(value):
        return repr(value)
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{int(exponent)}"
    return text


def timestamp_seconds(value: datetime.datetime) -> int | float:
    """Seconds since the epoch of a decoded AMQP timestamp (naive datetimes are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    seconds = value.timestamp()
    return int(seconds) if seconds.is_integer() else seconds
