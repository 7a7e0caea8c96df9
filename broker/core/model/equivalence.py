"""Redeclare equivalence with RabbitMQ's "inequivalent arg" texts (rabbit_misc:assert_args_equivalence and
assert_field_equivalence), shared by exchanges and queues."""

from __future__ import annotations

from typing import Any

from broker.core.model.arguments import amqp_type_name, erlang_term, is_amqp_string
from protocol.errors import ChannelError, ReplyCode

# An argument absent from one side of the comparison.
MISSING: Any = object()


def inequivalent(key: str, where: str, received: str, current: str) -> ChannelError:
    return ChannelError(
        ReplyCode.PRECONDITION_FAILED,
        f"inequivalent arg '{key}' for {where}: received {received} but current is {current}",
    )


class Atom(str):
    """An exchange type, which RabbitMQ holds as an atom: ~p quotes atoms like 'x-delayed-message'."""

    __slots__ = ()


def quoted(value: Any) -> str:
    """rabbit_misc:val/1 of a bare value: '~s' for a binary, '~p' otherwise ('true', 'direct', '5')."""
    if isinstance(value, Atom):
        plain = value[:1].islower() and all(c.isalnum() or c in "_@" for c in value)
        return f"'{value}'" if plain else f"''{value}''"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, bytes | bytearray):
        return f"'{bytes(value).decode('utf-8', 'replace')}'"
    return f"'{erlang_term(value)}'"


def typed(value: Any) -> str:
    """rabbit_misc:val/1 of a table entry: "the value 'v' of type 'longstr'", or "none" when absent."""
    if value is MISSING:
        return "none"
    text = quoted(value)[1:-1]
    return f"the value '{text}' of type '{amqp_type_name(value)}'"


def type_class(value: Any) -> str:
    # rabbit_misc:type_class/1: every integer width (and decimal) is "int", float and double are "float".
    name = amqp_type_name(value)
    if name in ("signedint", "long", "decimal"):
        return "int"
    if name == "double":
        return "float"
    return name


def erlang_equal(a: Any, b: Any) -> bool:
    if is_amqp_string(a) and is_amqp_string(b):
        return (a.encode() if isinstance(a, str) else a) == (b.encode() if isinstance(b, str) else b)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def check_arg_equivalence(key: str, current: Any, received: Any, where: str) -> None:
    # rabbit_misc:assert_args_equivalence1: absent on both sides is fine; present on both sides is fine when
    # the type classes match and the values are ==; otherwise the text shows bare values when both are present
    # and typed values ("the value 'x' of type 'longstr'" / "none") when one is absent.
    if current is MISSING and received is MISSING:
        return
    if current is MISSING or received is MISSING:
        raise inequivalent(key, where, typed(received), typed(current))
    if type_class(current) == type_class(received) and erlang_equal(current, received):
        return
    raise inequivalent(key, where, quoted(received), quoted(current))
