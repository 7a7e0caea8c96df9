"""The maps of RabbitMQ 4's `/management` node as broker.session.amqp10.management_bodies reads and writes
them: request bodies with 4.0.5's defaults and refusals, the arguments' table types, binding path segments
and the arguments' hash (held to the value RabbitMQ 4.0.5 put in a binding's location)."""

from __future__ import annotations

from typing import Any

import pytest

from broker.core.model.arguments import Long
from broker.session.amqp10.management_bodies import (
    ExchangeSpec,
    ManagementError,
    QueueSpec,
    args_hash,
    binding_location,
    decode_binding,
    decode_exchange,
    decode_queue,
    erlang_pair,
    from_table,
    parse_binding_segment,
    to_table,
)
from protocol.amqp10.types import Int, Symbol, UInt


def test_queue_and_exchange_bodies_take_4_0_5_defaults() -> None:
    assert decode_queue({}) == QueueSpec(durable=True, exclusive=False, auto_delete=False, arguments={})
    assert decode_exchange({}) == ExchangeSpec(type="direct", durable=True)
    assert decode_queue({"exclusive": True, "arguments": {"x-max-length": 5}}) == QueueSpec(
        exclusive=True, arguments={"x-max-length": 5}
    )


@pytest.mark.parametrize(
    ("decode", "body", "text"),
    [
        (decode_queue, {"foo": 1}, 'bad queue property {{utf8,<<"foo">>},{long,1}}'),
        (decode_queue, {"durable": "yes"}, 'bad queue property {{utf8,<<"durable">>},{utf8,<<"yes">>}}'),
        (decode_exchange, {"internal": UInt(1)}, 'bad exchange property {{utf8,<<"internal">>},{uint,1}}'),
        (
            decode_exchange,
            {"type": Symbol("x")},
            'bad exchange property {{utf8,<<"type">>},{symbol,<<"x">>}}',
        ),
        (decode_binding, {"bogus": None}, 'bad binding field {{utf8,<<"bogus">>},null}'),
    ],
)
def test_a_bad_field_is_a_400_naming_it_as_erlang_prints_it(decode: Any, body: object, text: str) -> None:
    with pytest.raises(ManagementError) as refused:
        decode(body)
    assert (refused.value.status, refused.value.text) == ("400", text)


def test_a_binding_body_needs_its_fields() -> None:
    spec = decode_binding({"source": "e", "destination_exchange": "f", "binding_key": "k", "arguments": {}})
    assert (spec.source, spec.destination, spec.to_queue, spec.binding_key) == ("e", "f", False, "k")
    with pytest.raises(KeyError):  # 4.0.5's session crashes on it (badmatch)
        decode_binding({"source": "e", "binding_key": "k", "arguments": {}})


def test_arguments_keep_their_amqp_types_as_0_9_1_ones() -> None:
    table = to_table({"long": 5, "int": Int(5), Symbol("sym"): Symbol("text"), "nested": {"a": [1, "b"]}})
    assert type(table["long"]) is Long
    assert type(table["int"]) is int
    assert table == {"long": 5, "int": 5, "sym": "text", "nested": {"a": [1, "b"]}}
    answered = from_table(table)
    assert (type(answered["long"]), type(answered["int"])) == (Long, Int)


def test_the_arguments_hash_is_4_0_5s() -> None:
    assert args_hash({}) == ""
    assert args_hash(to_table({"a": 1})) == "Ajat_Q"  # RabbitMQ 4.0.5's location for {"a": long 1}


def test_binding_segments_round_trip_with_percent_encoding() -> None:
    location = binding_location("e 1", True, "q/2", "k#", {})
    assert location == "/bindings/src=e%201;dstq=q%2F2;key=k%23;args="
    segment = location.removeprefix("/bindings/")
    assert parse_binding_segment(segment) == ("e 1", True, "q/2", "k#", "")
    with pytest.raises(ManagementError, match="bad binding path segment 'src=e;dstx=q;key=;args='"):
        parse_binding_segment("src=e;dstx=q;key=;args=")


def test_erlang_pair_prints_the_amqp_types() -> None:
    assert erlang_pair("k", True) == '{{utf8,<<"k">>},true}'
    assert erlang_pair("k", Long(2)) == '{{utf8,<<"k">>},{long,2}}'
