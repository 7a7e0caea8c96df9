"""A binding's ``properties_key`` exactly as RabbitMQ's management computes it, and the AMQP typing of JSON
arguments that key depends on.

rabbit_mgmt_format:pack_binding_props: ``~`` for an empty routing key without arguments, the quoted
routing key without arguments, else ``quote(key) ~ quote(args_hash(args))`` where args_hash is the base64url
(no padding) of ``<<(erlang:phash2(Args, 1 bsl 32)):32>>`` and ``Args`` is the binding's field table as
Erlang holds it: ``[{Name, Type, Value}]`` sorted by name (rabbit_binding:binding_action sorts it), nested
tables in the order they came, arrays as ``[{Type, Value}]``. So the key of a binding with arguments depends
on the AMQP types of its values: JSON integers are ``long``, a client's are as it sent them (see
broker.core.model.arguments).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import quote_plus

from broker.core.exchanges.erlang_hash import Atom, phash2
from broker.core.model.arguments import Long, amqp_type_name, freeze_table, timestamp_seconds


def json_arguments(value: Any) -> Any:
    """A JSON arguments object as rabbit_misc:to_amqp_table types it: integers ``long``, nested objects in
    Erlang map order (keys sorted by their bytes). ``null`` anywhere raises ValueError("null_not_allowed"),
    RabbitMQ's refusal (the API answers it as a 400)."""
    if value is None:
        raise ValueError("null_not_allowed")
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return Long(value)
    if isinstance(value, dict):
        return {key: json_arguments(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [json_arguments(element) for element in value]
    return value


def _quote(text: str) -> str:
    # rabbit_mgmt_format:quote_binding: form-urlencoded, "~" escaped because it separates the two parts.
    return quote_plus(text, safe="").replace("~", "%7E")


def _erlang_value(value: Any) -> object:
    """The Erlang term rabbit_binary_parser (or to_amqp_table) holds for a field value."""
    if isinstance(value, Mapping):
        return [(str(key), Atom(amqp_type_name(item)), _erlang_value(item)) for key, item in value.items()]
    if isinstance(value, list | tuple):
        return [(Atom(amqp_type_name(item)), _erlang_value(item)) for item in value]
    if isinstance(value, Decimal):
        sign, digits, exponent = value.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        return (-exponent if isinstance(exponent, int) else 0, unscaled)
    if isinstance(value, datetime.datetime):
        return timestamp_seconds(value)
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return value  # str/bytes binaries, bool atoms, None (undefined), floats


def arguments_hash(arguments: Mapping[str, Any]) -> str:
    """rabbit_mgmt_format:args_hash of a binding's arguments (names sorted, as RabbitMQ stores them)."""
    try:
        table = _erlang_value({key: arguments[key] for key in sorted(arguments)})
        digest = phash2(table, 1 << 32).to_bytes(4, "big")
    except RecursionError:
        # Nested past Python's recursion limit (RabbitMQ takes thousands of levels; phash2 here recurses):
        # a stable digest of the flat frozen form. The binding lists and unbinds; its key is not RabbitMQ's.
        digest = hashlib.sha256(repr(freeze_table(dict(arguments))).encode()).digest()[:4]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def properties_key(routing_key: str, arguments: Mapping[str, Any]) -> str:
    """rabbit_mgmt_format:pack_binding_props."""
    if not arguments:
        return _quote(routing_key) if routing_key else "~"
    return f"{_quote(routing_key)}~{_quote(arguments_hash(arguments))}"
