"""The ``headers`` exchange type: bindings match on message header values, selected by ``x-match``."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, ClassVar

from broker.core.model.arguments import (
    FLAT_DEPTH,
    FrozenTable,
    amqp_type_name,
    as_text,
    deeper_than,
    erlang_binary,
    erlang_term,
    freeze_table,
    is_amqp_string,
    timestamp_seconds,
)
from broker.core.model.message import Message
from protocol.errors import ChannelError, ReplyCode

_X_MATCH_MODES = {
    "all": (True, False),
    "any": (False, False),
    "all-with-x": (True, True),
    "any-with-x": (False, True),
}
_MISSING = object()
_VOID = object()  # a void (None) header value equals no binding value


def match_key(value: Any) -> Any:
    """The value RabbitMQ 3.13+ compares with ``=:=`` after stripping the AMQP type (mc:routing_headers and
    rabbit_exchange_type_headers:match/2): integers of any width compare by value, but ``5``, ``5.0``,
    ``"5"`` and ``true`` all differ; longstr and binary (``x``) with the same bytes are equal; a timestamp is
    its integer seconds, so it equals the same integer; a decimal is {Scale, Unscaled}, so ``1.50`` and
    ``1.5`` differ; tables and arrays compare element by element, in order.

    RabbitMQ 3.10-3.12 compared with ``==`` instead, where ``5`` matched ``5.0`` (checked against 3.10.8); and
    4.x scales header timestamps to milliseconds before comparing. We follow 3.13.
    """
    kind = type(value)
    if kind is str:
        return value
    if value is None:
        return _VOID
    if kind is bool:
        return ("bool", value)
    if kind is int:
        return value
    if kind is float:
        return ("float", value)
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            return data.decode("utf-8")  # same Erlang binary as a longstr with these bytes
        except UnicodeDecodeError:
            return data
    if isinstance(value, Decimal):
        sign, digits, exponent = value.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        return ("decimal", -exponent if isinstance(exponent, int) else 0, unscaled)
    if isinstance(value, datetime.datetime):
        return timestamp_seconds(value)
    if isinstance(value, Mapping | list | tuple) and deeper_than(value, FLAT_DEPTH):
        return _flat_match_key(value)
    if isinstance(value, Mapping):
        return ("table", tuple((k, match_key(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(match_key(v) for v in value))
    return value


def _flat_match_key(value: Any) -> tuple[Any, ...]:
    """The match key of a container nested deeper than FLAT_DEPTH, as flat prefix tokens (built, hashed and
    compared without recursion): equal values give equal tokens, as their nested keys would be equal."""
    tokens: list[Any] = ["flat"]
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, Mapping):
            tokens.append(("table", len(item)))
            for key, child in reversed(list(item.items())):
                pending.append(child)
                pending.append(_Key(key))
        elif isinstance(item, list | tuple):
            tokens.append(("array", len(item)))
            pending.extend(reversed(item))
        elif isinstance(item, _Key):
            tokens.append(item.key)
        else:
            tokens.append(match_key(item))
    return tuple(tokens)


class _Key:
    __slots__ = ("key",)

    def __init__(self, key: object) -> None:
        self.key = key


def parse_x_match(arguments: Mapping[str, Any]) -> tuple[bool, bool]:
    """(match_all, with_x) of a binding; raises RabbitMQ's validate_binding error (406) for a bad ``x-match``.

    A missing ``x-match`` means ``all`` (RabbitMQ: "spec is vague on whether it can be omitted but in practice
    it's useful to allow people to do this").
    """
    value = arguments.get("x-match", _MISSING)
    if value is _MISSING:
        return True, False
    if is_amqp_string(value):
        mode = _X_MATCH_MODES.get(as_text(value))
        if mode is not None:
            return mode
        raw = value.encode("utf-8") if isinstance(value, str) else value
        raise ChannelError(
            ReplyCode.PRECONDITION_FAILED,
            f"Invalid x-match field value {erlang_binary(raw)}; expected all, any, all-with-x, or any-with-x",
        )
    raise ChannelError(
        ReplyCode.PRECONDITION_FAILED,
        f"Invalid x-match field type {amqp_type_name(value)} (value {erlang_term(value)}); expected longstr",
    )


# (destination, match_all, ((header key, presence-only?, expected match_key), ...))
_Compiled = tuple[object, bool, tuple[tuple[str, bool, Any], ...]]


class HeadersExchangeType:
    """Precompiled matchers, one per binding; routing evaluates each against the message headers (RabbitMQ's
    headers exchange is also linear in its bindings). The routing key is ignored.

    ``all``/``any`` skip binding keys starting with ``x-``; ``all-with-x``/``any-with-x`` keep them;
    ``x-match`` itself is always skipped. A void (None) binding value only requires the header to be
    present. ``all`` with nothing left to compare matches every message; ``any`` with nothing matches none.
    """

    type_name: ClassVar[str] = "headers"
    unique_destinations: ClassVar[bool] = False

    __slots__ = ("_compiled", "_index")

    def __init__(self) -> None:
        self._index: dict[tuple[object, FrozenTable], tuple[_Compiled, int]] = {}
        self._compiled: tuple[_Compiled, ...] = ()

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        """RabbitMQ's headers type accepts any declare arguments."""

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        match_all, with_x = parse_x_match(arguments)
        key = (destination, freeze_table(arguments))
        entry = self._index.get(key)
        if entry is not None:
            self._index[key] = (entry[0], entry[1] + 1)
            return
        pairs = tuple(
            (name, value is None, None if value is None else match_key(value))
            for name, value in arguments.items()
            if name != "x-match" and (with_x or not name.startswith("x-"))
        )
        self._index[key] = ((destination, match_all, pairs), 1)
        self._compiled = tuple(compiled for compiled, _ in self._index.values())

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        key = (destination, freeze_table(arguments))
        entry = self._index.get(key)
        if entry is None:
            return
        if entry[1] > 1:
            self._index[key] = (entry[0], entry[1] - 1)
            return
        del self._index[key]
        self._compiled = tuple(compiled for compiled, _ in self._index.values())

    def route(self, message: Message) -> list[object]:
        headers = message.headers
        get = headers.get if headers else _empty_get
        out: list[object] = []
        for destination, match_all, pairs in self._compiled:
            if match_all:
                for name, presence, expected in pairs:
                    value = get(name, _MISSING)
                    if value is _MISSING:
                        break
                    if not presence and (value if type(value) is str else match_key(value)) != expected:
                        break
                else:
                    out.append(destination)
            else:
                for name, presence, expected in pairs:
                    value = get(name, _MISSING)
                    if value is _MISSING:
                        continue
                    if presence or (value if type(value) is str else match_key(value)) == expected:
                        out.append(destination)
                        break
        return out


def _empty_get(name: str, default: object) -> object:
    return default
