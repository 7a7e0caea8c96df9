"""properties_key against figures RabbitMQ 3.10.8 gave for the same bindings (its Location headers), and the
`Long` type that carries a JSON integer's AMQP type through binding identity and the store."""

from __future__ import annotations

from typing import Any

import pytest

from broker.core.model.arguments import Long, amqp_type_name, freeze_table, thaw_table
from broker.core.model.typed_json import decode_table, encode_table
from broker.management.views.binding_key import json_arguments, properties_key

# (routing key, JSON arguments, RabbitMQ's properties_key), from POST /api/bindings on RabbitMQ 3.10.8.
RABBITMQ_KEYS: list[tuple[str, dict[str, Any], str]] = [
    ("k0", {"x-int": 1}, "k0~wJJcfA"),
    ("k1", {"x-float": 1.5}, "k1~XfNvdw"),
    ("k2", {"arr": [1, "two", False, 2.25]}, "k2~GW06MQ"),
    ("k3", {"nested": {"z": 1, "a": "b"}}, "k3~ozdYog"),
    ("k4", {"nested": {"m": {"k": [True]}}}, "k4~Pihvsw"),
    ("k5", {"x-big": 300000000000}, "k5~xfIwoA"),
    ("k6", {"s": "s é"}, "k6~NEbHVg"),
    ("k0", {"x-neg": -7}, "k0~BvXVUQ"),
    ("k1", {"x-bool": True}, "k1~CCrdLA"),
    ("a.*", {"k": "v"}, "a.%2A~8IXMRA"),
    ("a~", {"n": 0}, "a%7E~Lrk9ww"),
    ("a b", {"n": 0}, "a+b~Lrk9ww"),
]


@pytest.mark.parametrize(("routing_key", "arguments", "expected"), RABBITMQ_KEYS)
def test_properties_key_is_rabbitmqs(routing_key: str, arguments: dict[str, Any], expected: str) -> None:
    assert properties_key(routing_key, json_arguments(arguments)) == expected


def test_keys_without_arguments_are_the_quoted_routing_key() -> None:
    assert (properties_key("", {}), properties_key("a.#", {}), properties_key("q sp", {})) == (
        "~",
        "a.%23",
        "q+sp",
    )


def test_a_clients_integer_is_signedint_and_hashes_apart_from_a_json_long() -> None:
    assert amqp_type_name(5) == "signedint"
    assert amqp_type_name(Long(5)) == "long"
    assert properties_key("k", {"x": 5}) != properties_key("k", {"x": Long(5)})
    assert freeze_table({"x": 5}) != freeze_table({"x": Long(5)})  # distinct bindings, as in RabbitMQ


def test_long_survives_freezing_and_the_store_encoding() -> None:
    table = json_arguments({"b": 1, "a": {"n": [2, "s"]}})
    thawed = thaw_table(freeze_table(table))
    assert type(thawed["b"]) is Long
    assert type(thawed["a"]["n"][0]) is Long
    decoded = decode_table(encode_table(table))
    assert decoded == table
    assert decoded is not None
    assert type(decoded["b"]) is Long


def test_null_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="null_not_allowed"):
        json_arguments({"a": [None]})
